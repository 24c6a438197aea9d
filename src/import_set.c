/*
** import_set.c -- the judgments (and pointwise grades) an importer read from a source made
** elsewhere, held in memory until the store takes them in one transaction (store_import.c).
**
** Invariants:
**   - Strings are copied and interned (a judge's name, an answer repeated in both orders are
**     held once); a judgment keeps indices, UINT32_MAX for an absent field.
**   - A set never holds two judgments with the same key: protocol, judge, template, options,
**     item, the answer shown first, the answer shown second, repetition. The second is refused
**     and the message names where the first came from.
*/
#include "internal.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

enum { J_JUDGE, J_ITEM, J_CANDIDATE, J_BASELINE, J_PROTOCOL, J_TEMPLATE, J_CATEGORY,
       J_LANGUAGE, J_QUESTION, J_CANDIDATE_ANSWER, J_BASELINE_ANSWER, J_RAW, J_REQUEST,
       J_JUDGE_FAMILY, J_CANDIDATE_FAMILY, J_BASELINE_FAMILY, J_EXTRA, J_WHERE, J__COUNT };

enum { S_JUDGE, S_ITEM, S_MODEL, S_KIND, S_TEMPLATE, S_REASON, S_CATEGORY, S_QUESTION,
       S_ANSWER, S_RAW, S_EXTRA, S_JUDGE_FAMILY, S_MODEL_FAMILY, S_WHERE, S__COUNT };

typedef struct stored_judgment {
    uint32_t text[J__COUNT];
    int options, order, rep, strength;
    char position_verdict;
} stored_judgment;

typedef struct stored_score {
    uint32_t text[S__COUNT];
    int rep, value;
} stored_score;

struct arb__import_set {
    arb__strtab strings;
    arb__strtab keys;        /* one per judgment/score key; index = position in keyed[] */
    size_t *keyed;           /* keys.n entries: index of the judgment (or score | high bit) */
    size_t cap_keyed;
    stored_judgment *judgments;
    size_t n_judgments, cap_judgments;
    stored_score *scores;
    size_t n_scores, cap_scores;
    size_t skipped;
};

#define SCORE_BIT ((size_t)1 << (sizeof(size_t) * 8 - 1))

arb__import_set *arb__import_set_create(void) { return calloc(1, sizeof(arb__import_set)); }

void arb__import_set_destroy(arb__import_set *set)
{
    if (!set) return;
    arb__strtab_free(&set->strings);
    arb__strtab_free(&set->keys);
    free(set->keyed);
    free(set->judgments);
    free(set->scores);
    free(set);
}

/* Interns s (NULL stays NONE); returns -1 when out of memory. */
static int intern(arb__import_set *set, const char *s, uint32_t *out)
{
    if (!s) {
        *out = NONE;
        return 0;
    }
    *out = arb__strtab_intern(&set->strings, s);
    return *out == NONE ? -1 : 0;
}

static const char *text_of(const arb__import_set *set, uint32_t k)
{
    return k == NONE ? NULL : set->strings.names[k];
}

/* Registers key for entry (judgment index, or score index | SCORE_BIT). 0 new, 1 already
** there (*first = the earlier entry), -1 out of memory. */
static int claim_key(arb__import_set *set, const char *key, size_t entry, size_t *first)
{
    uint32_t k = arb__strtab_find(&set->keys, key);
    if (k != NONE) {
        *first = set->keyed[k];
        return 1;
    }
    if (arb__grow(&set->keyed, &set->cap_keyed, set->keys.n + 1, sizeof *set->keyed)) return -1;
    k = arb__strtab_intern(&set->keys, key);
    if (k == NONE) return -1;
    set->keyed[k] = entry;
    return 0;
}

/* The key of a judgment: fields joined by \x1f (unit separator, never in a name we accept
** as meaningful; a name containing it still gives a distinct key because every field is
** followed by one). */
char *arb__import_judgment_key(const arb__import_judgment *j)
{
    const char *first = j->order == 0 ? j->candidate : j->baseline;
    const char *second = j->order == 0 ? j->baseline : j->candidate;
    return arb__sprintf("%s\x1f%s\x1f%s\x1f%d\x1f%s\x1f%s\x1f%s\x1f%d",
                        j->protocol ? j->protocol : "sbs", j->judge,
                        j->template_name ? j->template_name : "", j->options, j->item, first,
                        second, j->rep);
}

static int empty(const char *s) { return !s || !*s; }

arb_status arb__import_set_add(arb__import_set *set, const arb__import_judgment *j,
                               char **errmsg)
{
    if (!set || !j) return ARB_INVALID;
    const char *where = j->where ? j->where : "?";
    if (empty(j->judge) || empty(j->item) || empty(j->candidate) || empty(j->baseline)) {
        arb__set_err(errmsg, "%s: a judgment needs a judge, an item, a candidate and a baseline",
                     where);
        return ARB_INVALID;
    }
    if (!strcmp(j->candidate, j->baseline)) {
        arb__set_err(errmsg, "%s: candidate and baseline are both \"%s\"", where, j->candidate);
        return ARB_INVALID;
    }
    if (j->options < 2 || j->options > 4 || (j->order != 0 && j->order != 1) || j->rep < 0 ||
        !j->position_verdict || !strchr("ABCDE", j->position_verdict) || j->strength < 0 ||
        j->strength > 2) {
        arb__set_err(errmsg, "%s: options must be 2..4, order 0 or 1, rep >= 0, verdict A..E "
                     "and strength 0..2", where);
        return ARB_INVALID;
    }
    char *key = arb__import_judgment_key(j);
    if (!key) return ARB_NOMEM;
    size_t first = 0;
    int claimed = claim_key(set, key, set->n_judgments, &first);
    free(key);
    if (claimed < 0) return ARB_NOMEM;
    if (claimed > 0) {
        const stored_judgment *f = &set->judgments[first];
        arb__set_err(errmsg, "%s: judge \"%s\" judged item \"%s\" (%s shown first, %s second, "
                     "rep %d) already at %s", where, j->judge, j->item,
                     j->order == 0 ? j->candidate : j->baseline,
                     j->order == 0 ? j->baseline : j->candidate, j->rep,
                     text_of(set, f->text[J_WHERE]) ? text_of(set, f->text[J_WHERE]) : "?");
        return ARB_INVALID;
    }
    if (arb__grow(&set->judgments, &set->cap_judgments, set->n_judgments + 1,
                  sizeof *set->judgments))
        return ARB_NOMEM;
    stored_judgment *s = &set->judgments[set->n_judgments];
    const char *texts[J__COUNT] = {
        [J_JUDGE] = j->judge, [J_ITEM] = j->item, [J_CANDIDATE] = j->candidate,
        [J_BASELINE] = j->baseline, [J_PROTOCOL] = j->protocol,
        [J_TEMPLATE] = j->template_name, [J_CATEGORY] = j->category,
        [J_LANGUAGE] = j->language, [J_QUESTION] = j->question,
        [J_CANDIDATE_ANSWER] = j->candidate_answer, [J_BASELINE_ANSWER] = j->baseline_answer,
        [J_RAW] = j->raw, [J_REQUEST] = j->request, [J_JUDGE_FAMILY] = j->judge_family,
        [J_CANDIDATE_FAMILY] = j->candidate_family, [J_BASELINE_FAMILY] = j->baseline_family,
        [J_EXTRA] = j->extra, [J_WHERE] = j->where,
    };
    for (int f = 0; f < J__COUNT; f++)
        if (intern(set, texts[f], &s->text[f])) return ARB_NOMEM;
    s->options = j->options;
    s->order = j->order;
    s->rep = j->rep;
    s->strength = j->strength;
    s->position_verdict = j->position_verdict;
    set->n_judgments++;
    return ARB_OK;
}

arb_status arb__import_set_add_score(arb__import_set *set, const arb__import_score *sc,
                                     char **errmsg)
{
    if (!set || !sc) return ARB_INVALID;
    const char *where = sc->where ? sc->where : "?";
    if (empty(sc->judge) || empty(sc->item) || empty(sc->model) || empty(sc->kind)) {
        arb__set_err(errmsg, "%s: a grade needs a judge, an item, a model and a kind", where);
        return ARB_INVALID;
    }
    int hi = !strcmp(sc->kind, "yesno") ? 1 : !strcmp(sc->kind, "grade") ? 5
             : !strcmp(sc->kind, "grade10") ? 10 : 0;
    int lo = !strcmp(sc->kind, "yesno") ? 0 : 1;
    if (!hi || sc->rep < 0 || (sc->value != -1 && (sc->value < lo || sc->value > hi))) {
        arb__set_err(errmsg, "%s: kind must be yesno, grade or grade10, with a value in its "
                     "range (-1 for none) and rep >= 0", where);
        return ARB_INVALID;
    }
    char *key = arb__sprintf("%s\x1f%s\x1f%s\x1f%s\x1f%s\x1f%d", sc->judge, sc->item, sc->model,
                             sc->kind, sc->template_name ? sc->template_name : "", sc->rep);
    if (!key) return ARB_NOMEM;
    size_t first = 0;
    int claimed = claim_key(set, key, set->n_scores | SCORE_BIT, &first);
    free(key);
    if (claimed < 0) return ARB_NOMEM;
    if (claimed > 0) {
        const stored_score *f = &set->scores[first & ~SCORE_BIT];
        arb__set_err(errmsg, "%s: judge \"%s\" graded model \"%s\" on item \"%s\" (rep %d) "
                     "already at %s", where, sc->judge, sc->model, sc->item, sc->rep,
                     text_of(set, f->text[S_WHERE]) ? text_of(set, f->text[S_WHERE]) : "?");
        return ARB_INVALID;
    }
    if (arb__grow(&set->scores, &set->cap_scores, set->n_scores + 1, sizeof *set->scores))
        return ARB_NOMEM;
    stored_score *s = &set->scores[set->n_scores];
    const char *texts[S__COUNT] = {
        [S_JUDGE] = sc->judge, [S_ITEM] = sc->item, [S_MODEL] = sc->model,
        [S_KIND] = sc->kind, [S_TEMPLATE] = sc->template_name, [S_REASON] = sc->reason,
        [S_CATEGORY] = sc->category, [S_QUESTION] = sc->question, [S_ANSWER] = sc->answer,
        [S_RAW] = sc->raw, [S_EXTRA] = sc->extra, [S_JUDGE_FAMILY] = sc->judge_family,
        [S_MODEL_FAMILY] = sc->model_family, [S_WHERE] = sc->where,
    };
    for (int f = 0; f < S__COUNT; f++)
        if (intern(set, texts[f], &s->text[f])) return ARB_NOMEM;
    s->rep = sc->rep;
    s->value = sc->value;
    set->n_scores++;
    return ARB_OK;
}

void arb__import_set_skip(arb__import_set *set, size_t n)
{
    if (set) set->skipped += n;
}

size_t arb__import_set_count(const arb__import_set *set) { return set ? set->n_judgments : 0; }
size_t arb__import_set_score_count(const arb__import_set *set) { return set ? set->n_scores : 0; }
size_t arb__import_set_skipped(const arb__import_set *set) { return set ? set->skipped : 0; }

arb__import_judgment arb__import_set_at(const arb__import_set *set, size_t i)
{
    const stored_judgment *s = &set->judgments[i];
    return (arb__import_judgment){
        .judge = text_of(set, s->text[J_JUDGE]),
        .item = text_of(set, s->text[J_ITEM]),
        .candidate = text_of(set, s->text[J_CANDIDATE]),
        .baseline = text_of(set, s->text[J_BASELINE]),
        .protocol = text_of(set, s->text[J_PROTOCOL]),
        .template_name = text_of(set, s->text[J_TEMPLATE]),
        .options = s->options,
        .order = s->order,
        .rep = s->rep,
        .position_verdict = s->position_verdict,
        .strength = s->strength,
        .category = text_of(set, s->text[J_CATEGORY]),
        .language = text_of(set, s->text[J_LANGUAGE]),
        .question = text_of(set, s->text[J_QUESTION]),
        .candidate_answer = text_of(set, s->text[J_CANDIDATE_ANSWER]),
        .baseline_answer = text_of(set, s->text[J_BASELINE_ANSWER]),
        .raw = text_of(set, s->text[J_RAW]),
        .request = text_of(set, s->text[J_REQUEST]),
        .judge_family = text_of(set, s->text[J_JUDGE_FAMILY]),
        .candidate_family = text_of(set, s->text[J_CANDIDATE_FAMILY]),
        .baseline_family = text_of(set, s->text[J_BASELINE_FAMILY]),
        .extra = text_of(set, s->text[J_EXTRA]),
        .where = text_of(set, s->text[J_WHERE]),
    };
}

arb__import_score arb__import_set_score_at(const arb__import_set *set, size_t i)
{
    const stored_score *s = &set->scores[i];
    return (arb__import_score){
        .judge = text_of(set, s->text[S_JUDGE]),
        .item = text_of(set, s->text[S_ITEM]),
        .model = text_of(set, s->text[S_MODEL]),
        .kind = text_of(set, s->text[S_KIND]),
        .template_name = text_of(set, s->text[S_TEMPLATE]),
        .rep = s->rep,
        .value = s->value,
        .reason = text_of(set, s->text[S_REASON]),
        .category = text_of(set, s->text[S_CATEGORY]),
        .question = text_of(set, s->text[S_QUESTION]),
        .answer = text_of(set, s->text[S_ANSWER]),
        .raw = text_of(set, s->text[S_RAW]),
        .extra = text_of(set, s->text[S_EXTRA]),
        .judge_family = text_of(set, s->text[S_JUDGE_FAMILY]),
        .model_family = text_of(set, s->text[S_MODEL_FAMILY]),
        .where = text_of(set, s->text[S_WHERE]),
    };
}
