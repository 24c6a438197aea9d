/*
** import.c -- importers of existing judgment data into battle sets (METHODS §6): the review
** folders of the PRD study's Vicuna80 data ("prd"), Chatbot Arena battle dumps ("arena") and
** FastChat MT-Bench pairwise judgments ("fastchat"). Each maps its source's coding to battles
** (q, i shown first, j, reviewer, s = -1 i better / 0 tie / +1 j better).
**
** Invariants:
**   - An import is all or nothing: battles are read into a scratch set and appended to the
**     caller's set only when the whole source is good. Errors name the file, the line and the
**     field ("path:line: field \"score\": expected ..., got ...").
**   - A review without a verdict (PRD score -1, FastChat "error") is never turned into one: it
**     is left out and counted (arb_battles_skipped).
**   - Files are read in a fixed order (folder and file names sorted bytewise, lines in file
**     order), so the same folder always gives the same battle order (online Elo depends on it).
**
** What the sources say, as verified on the data (details in the README):
**   - PRD: ratings-<reviewer>/answer_<X>-vs-answer_<Y>-<reviewer>-reviewer[_-]threeclass.jsonl
**     (the vicuna-13b reviewer's files have no "threeclass" suffix), one review per question,
**     X shown first as "Assistant 1". score 1 = X better, 2 = Y better, 3 = tie, -1 =
**     unparseable. Checked on /work/shared/data/prd-vicuna80: in every LLM file answer1_id is
**     X's answer to that question in generations/answer_X.jsonl and answer2_id is Y's (8000 of
**     8000 reviews); the review texts end in the digit of the score (e.g. "...\n\n2" with score
**     2: 1473, 1569 and 402 reviews for 1, 2, 3), and where GPT-4 writes "Assistant 1: 9/10,
**     Assistant 2: 8/10" the higher mark agrees with the score (32 of 32); in the human files
**     (question_id, text = the question, score; one line per annotator) the majority vote
**     agrees with GPT-4's review of the same ordered pair in 511 of 800 comparisons under this
**     coding against 159 with the sides swapped. The data holds no -1 scores, so nothing is
**     skipped there; the importer still skips and counts them.
**   - PRD generations/answer_<model>.jsonl, when present, give each battle both answers'
**     style covariates (arb__answer_style), for length- and style-controlled rankings.
**   - PRD files spelled with hyphens (answer-gpt35-vs-answer-gpt4-...) are a second GPT-3.5
**     run that the published analysis leaves out: they are ignored, as are files not ending in
**     .jsonl. The human files also compare guanaco-7b/13b/33b/65b, which no LLM reviewed: their
**     battles are kept (they are real human judgments); the rankings leave humans out of the
**     contestant ranking and compare them only on comparisons the LLM reviewers also made.
**   - FastChat (fastchat/llm_judge/common.py, play_a_match_pair): game 1 shows model_1 first
**     as "A"; game 2 shows model_2 first, and its verdict is mapped back to model names before
**     it is written, so g2_winner "model_1" means model_1 won (not the first-shown answer).
**
** Not here: the arena convention itself (battles.c) and storing the battles (battles.c).
*/
#include "internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- shared helpers -------------------------------------------------------------------------- */

/* Adds a battle the importer built; a refusal (which the checks before should prevent) still
** names the place. */
static arb_status add_at(arb_battles *b, const arb_battle *battle, const char *path, size_t line)
{
    arb_status st = arb_battles_add(b, battle);
    if (st == ARB_INVALID)
        return arb__battles_fail(b, ARB_PARSE, "%s:%zu: %s", path, line, arb_battles_errmsg(b));
    return st;
}

static int cmp_names(const void *pa, const void *pb)
{
    return strcmp(*(char *const *)pa, *(char *const *)pb);
}

/* See internal.h. */
void arb__import_free_names(char **names, size_t n)
{
    for (size_t k = 0; k < n; k++) free(names[k]);
    free(names);
}

/* See internal.h. */
arb_status arb__import_list_folder(arb_battles *b, const char *folder, char ***names, size_t *n)
{
    *names = NULL;
    *n = 0;
    DIR *dir = opendir(folder);
    if (!dir)
        return arb__battles_fail(b, errno == ENOENT ? ARB_NOTFOUND : ARB_IO,
                                 "%s: cannot open the folder: %s", folder, strerror(errno));
    size_t cap = 0;
    arb_status st = ARB_OK;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        if (*n == cap) {
            size_t grown = cap ? cap * 2 : 32;
            char **more = realloc(*names, grown * sizeof *more);
            if (!more) {
                st = ARB_NOMEM;
                break;
            }
            *names = more;
            cap = grown;
        }
        if (!((*names)[*n] = arb__strdup(e->d_name))) {
            st = ARB_NOMEM;
            break;
        }
        (*n)++;
    }
    closedir(dir);
    if (st) {
        arb__import_free_names(*names, *n);
        *names = NULL;
        *n = 0;
        return arb__battles_fail(b, st, "%s: out of memory", folder);
    }
    if (*n) qsort(*names, *n, sizeof **names, cmp_names);
    return ARB_OK;
}

/* 1 when path is a folder / a regular file. */
static int is_kind(const char *path, int folder)
{
    struct stat sb;
    if (stat(path, &sb) != 0) return 0;
    return folder ? S_ISDIR(sb.st_mode) : S_ISREG(sb.st_mode);
}

/* ---- PRD Vicuna80 ---------------------------------------------------------------------------- */

/* The style of every answer in generations/answer_<model>.jsonl, keyed "model\tquestion". */
typedef struct prd_styles {
    arb__strtab keys;
    double (*style)[ARB_STYLE__COUNT]; /* parallel to keys */
    size_t cap;
} prd_styles;

/* One review file: the contestants from its name and the reviewer from its folder. */
typedef struct prd_file {
    const char *first, *second, *reviewer;
    const prd_styles *styles; /* may be empty */
} prd_file;

/* Copies the style of model's answer to question into out (left NAN when unknown). */
static void prd_style(const prd_styles *ps, const char *model, const char *question, double *out)
{
    char key[512];
    if (!ps->keys.n || snprintf(key, sizeof key, "%s\t%s", model, question) >= (int)sizeof key)
        return;
    uint32_t k = arb__strtab_find(&ps->keys, key);
    if (k != UINT32_MAX) memcpy(out, ps->style[k], sizeof ps->style[k]);
}

/* The model and file of one generations/answer_<model>.jsonl, while it is read. */
typedef struct prd_gen {
    prd_styles *styles;
    const char *model;
} prd_gen;

/* One answer line: question_id and text. */
static arb_status prd_answer(void *ud, arb_battles *b, json_t *obj, const char *path,
                             size_t line)
{
    prd_gen *g = ud;
    char qbuf[32];
    json_t *v = json_object_get(obj, "question_id");
    const char *q = arb__battles_question_text(v, qbuf, sizeof qbuf);
    if (!q)
        return arb__battles_field_fail(b, path, line, "question_id",
                                       "an integer or a non-empty string", v);
    v = json_object_get(obj, "text");
    if (!json_is_string(v))
        return arb__battles_field_fail(b, path, line, "text", "a string (the answer)", v);
    char *key = arb__sprintf("%s\t%s", g->model, q);
    uint32_t k = key ? arb__strtab_intern(&g->styles->keys, key) : UINT32_MAX;
    free(key);
    if (k == UINT32_MAX) return arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", path);
    if (k >= g->styles->cap) {
        size_t cap = g->styles->cap ? g->styles->cap * 2 : 256;
        double (*grown)[ARB_STYLE__COUNT] = realloc(g->styles->style, cap * sizeof *grown);
        if (!grown) return arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", path);
        g->styles->style = grown;
        g->styles->cap = cap;
    }
    arb__answer_style(json_string_value(v), g->styles->style[k]);
    return ARB_OK;
}

/* Reads root/generations/answer_<model>.jsonl when present: the answers' lengths and markdown
** counts become the battles' style covariates (length-controlled and style-controlled
** rankings need them). A root without the folder imports without styles. */
static arb_status prd_load_styles(arb_battles *b, const char *root, prd_styles *ps)
{
    char *folder = arb__sprintf("%s/generations", root);
    if (!folder) return arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", root);
    arb_status st = ARB_OK;
    char **names = NULL;
    size_t n = 0;
    if (is_kind(folder, 1)) st = arb__import_list_folder(b, folder, &names, &n);
    for (size_t k = 0; k < n && !st; k++) {
        static const char prefix[] = "answer_";
        size_t len = strlen(names[k]);
        if (strncmp(names[k], prefix, sizeof prefix - 1) || len <= sizeof prefix - 1 + 6 ||
            strcmp(names[k] + len - 6, ".jsonl"))
            continue;
        char *model = arb__strndup(names[k] + sizeof prefix - 1, len - (sizeof prefix - 1) - 6);
        char *path = arb__sprintf("%s/%s", folder, names[k]);
        if (!model || !path) st = arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", folder);
        else if (is_kind(path, 0)) {
            prd_gen g = {ps, model};
            st = arb__battles_each_json(b, path, 0, prd_answer, &g);
        }
        free(model);
        free(path);
    }
    arb__import_free_names(names, n);
    free(folder);
    return st;
}

/* Splits a review file name "answer_<X>-vs-answer_<Y>-<reviewer>-reviewer<suffix>" with
** suffix "_threeclass.jsonl", "-threeclass.jsonl" or ".jsonl" into X and Y (caller frees).
** 0, -1 when the name is not of that form, -2 when out of memory. */
static int prd_split_name(const char *name, const char *reviewer, char **x, char **y)
{
    static const char *const suffixes[] = {"_threeclass.jsonl", "-threeclass.jsonl", ".jsonl"};
    static const char prefix[] = "answer_", middle[] = "-vs-answer_";
    *x = *y = NULL;
    if (strncmp(name, prefix, sizeof prefix - 1)) return -1;
    const char *first = name + sizeof prefix - 1;
    const char *vs = strstr(first, middle);
    if (!vs || vs == first) return -1;
    const char *rest = vs + sizeof middle - 1;
    size_t rest_len = strlen(rest);
    for (size_t k = 0; k < sizeof suffixes / sizeof suffixes[0]; k++) {
        char *tail = arb__sprintf("-%s-reviewer%s", reviewer, suffixes[k]);
        if (!tail) return -2;
        size_t tail_len = strlen(tail);
        int match = rest_len > tail_len && !strcmp(rest + rest_len - tail_len, tail);
        free(tail);
        if (!match) continue;
        *x = arb__strndup(first, (size_t)(vs - first));
        *y = arb__strndup(rest, rest_len - tail_len);
        if (*x && *y) return 0;
        free(*x);
        free(*y);
        *x = *y = NULL;
        return -2;
    }
    return -1;
}

/* One PRD review line: question_id (integer or string) and score (1, 2, 3 or -1). */
static arb_status prd_review(void *ud, arb_battles *b, json_t *obj, const char *path,
                             size_t line)
{
    const prd_file *f = ud;
    char qbuf[32];
    arb_battle battle = arb_battle_init();
    json_t *v = json_object_get(obj, "question_id");
    if (!(battle.question = arb__battles_question_text(v, qbuf, sizeof qbuf)))
        return arb__battles_field_fail(b, path, line, "question_id",
                                       "an integer or a non-empty string", v);
    v = json_object_get(obj, "score");
    json_int_t score = json_is_integer(v) ? json_integer_value(v) : 0;
    switch (score) {
    case 1: battle.s = -1; break; /* the first answer (X, "Assistant 1") is better */
    case 2: battle.s = 1; break;  /* the second (Y) is better */
    case 3: battle.s = 0; break;  /* tie */
    case -1: b->skipped++; return ARB_OK; /* the reviewer's verdict could not be read */
    default:
        return arb__battles_field_fail(b, path, line, "score",
                                       "1 (first answer better), 2 (second better), 3 (tie) "
                                       "or -1 (unparseable)", v);
    }
    battle.model_i = f->first;
    battle.model_j = f->second;
    battle.reviewer = f->reviewer;
    prd_style(f->styles, f->first, battle.question, battle.style_i);
    prd_style(f->styles, f->second, battle.question, battle.style_j);
    return add_at(b, &battle, path, line);
}

/* The review files of one ratings-<reviewer> folder, in name order. */
static arb_status prd_folder(arb_battles *b, const char *folder, const char *reviewer,
                             const prd_styles *styles)
{
    char **names = NULL;
    size_t n = 0;
    arb_status st = arb__import_list_folder(b, folder, &names, &n);
    for (size_t k = 0; k < n && !st; k++) {
        const char *name = names[k];
        size_t len = strlen(name);
        /* not reviews (LICENSE, notes), or the second GPT-3.5 run spelled with hyphens */
        if (len < 6 || strcmp(name + len - 6, ".jsonl") || !strncmp(name, "answer-", 7))
            continue;
        char *path = arb__sprintf("%s/%s", folder, name);
        char *x = NULL, *y = NULL;
        if (!path) {
            st = arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", folder);
            break;
        }
        if (is_kind(path, 0)) {
            int rc = prd_split_name(name, reviewer, &x, &y);
            if (rc == -2)
                st = arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", path);
            else if (rc)
                st = arb__battles_fail(b, ARB_PARSE, "%s: file name: expected "
                                       "answer_<X>-vs-answer_<Y>-%s-reviewer_threeclass.jsonl "
                                       "(or -threeclass.jsonl, or .jsonl), the reviewer being "
                                       "the folder's", path, reviewer);
            else if (!strcmp(x, y))
                st = arb__battles_fail(b, ARB_PARSE, "%s: file name: both answers are \"%s\"",
                                       path, x);
            else {
                prd_file f = {.first = x, .second = y, .reviewer = reviewer, .styles = styles};
                st = arb__battles_each_json(b, path, 0, prd_review, &f);
            }
        }
        free(x);
        free(y);
        free(path);
    }
    arb__import_free_names(names, n);
    return st;
}

/* A PRD Vicuna80 root: every ratings-<reviewer> folder in name order. */
static arb_status import_prd(arb_battles *b, const char *root)
{
    struct stat sb;
    if (stat(root, &sb) != 0)
        return arb__battles_fail(b, errno == ENOENT || errno == ENOTDIR ? ARB_NOTFOUND : ARB_IO,
                                 "%s: cannot open: %s", root, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return arb__battles_fail(b, ARB_INVALID, "%s: expected the PRD Vicuna80 folder (the one "
                                 "holding ratings-<reviewer> folders), got a file", root);
    char **names = NULL;
    size_t n = 0, folders = 0;
    prd_styles styles;
    memset(&styles, 0, sizeof styles);
    arb_status st = prd_load_styles(b, root, &styles);
    if (!st) st = arb__import_list_folder(b, root, &names, &n);
    for (size_t k = 0; k < n && !st; k++) {
        static const char prefix[] = "ratings-";
        if (strncmp(names[k], prefix, sizeof prefix - 1) || !names[k][sizeof prefix - 1])
            continue;
        char *folder = arb__sprintf("%s/%s", root, names[k]);
        if (!folder) st = arb__battles_fail(b, ARB_NOMEM, "%s: out of memory", root);
        else if (is_kind(folder, 1)) {
            folders++;
            st = prd_folder(b, folder, names[k] + sizeof prefix - 1, &styles);
        }
        free(folder);
    }
    arb__import_free_names(names, n);
    arb__strtab_free(&styles.keys);
    free(styles.style);
    if (!st && !folders)
        st = arb__battles_fail(b, ARB_NOTFOUND, "%s: no ratings-<reviewer> folders: expected "
                               "the PRD Vicuna80 folder", root);
    return st;
}

/* ---- Chatbot Arena --------------------------------------------------------------------------- */

static arb_status arena_battle(void *ud, arb_battles *b, json_t *obj, const char *path,
                               size_t line)
{
    (void)ud;
    return arb__battles_add_json(b, obj, path, line);
}

/* ---- FastChat MT-Bench pairwise judgments ---------------------------------------------------- */

/* One judgment line (fastchat/llm_judge, model_judgment/<judge>_pair.jsonl): two games, read
** as the judgment importer reads them (import_fastchat.c). */
static arb_status fastchat_judgment(void *ud, arb_battles *b, json_t *obj, const char *path,
                                    size_t line)
{
    (void)ud;
    arb__fastchat_line p;
    arb_status st = arb__fastchat_pair_read(b, obj, path, line, &p);
    if (!st) st = arb__fastchat_battles(b, &p, p.judge, path, line);
    arb__fastchat_line_free(&p);
    return st;
}

/* ---- entry point ----------------------------------------------------------------------------- */

/* Imports path as kind ("prd": the PRD Vicuna80 folder; "arena": a JSON array or JSONL of
** arena battles; "fastchat": a FastChat pairwise judgment JSONL file) and appends the battles
** to b, all or nothing. ARB_INVALID for an unknown kind, ARB_PARSE / ARB_NOTFOUND / ARB_IO
** with "path:line: ..." in b's message. */
arb_status arb_battles_import(arb_battles *b, const char *kind, const char *path)
{
    if (!b) return ARB_INVALID;
    if (!kind || !path) return arb__battles_fail(b, ARB_INVALID, "import: no kind or no path");
    int which = !strcmp(kind, "prd") ? 0 : !strcmp(kind, "arena") ? 1
                                         : !strcmp(kind, "fastchat") ? 2 : -1;
    if (which < 0)
        return arb__battles_fail(b, ARB_INVALID, "import: unknown kind \"%s\": expected prd, "
                                 "arena or fastchat", kind);
    arb_battles *scratch = arb_battles_create();
    if (!scratch) return arb__battles_fail(b, ARB_NOMEM, "import: out of memory");
    arb_status st;
    if (which == 0) st = import_prd(scratch, path);
    else if (which == 1) st = arb__battles_each_json(scratch, path, 1, arena_battle, NULL);
    else st = arb__battles_each_json(scratch, path, 0, fastchat_judgment, NULL);
    if (st)
        arb__battles_fail(b, st, "%s", arb_battles_errmsg(scratch));
    else
        st = arb__battles_append(b, scratch);
    arb_battles_destroy(scratch);
    return st;
}
