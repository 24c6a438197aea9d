/*
** resume.c -- the judgments a rerun finds already recorded, read from the store in one query
** (arb__store_each_recorded_pairwise) and held as a set, so deciding "nothing to send" for a
** node costs one hash lookup instead of a claim, a read of the stored reply and a rewrite of
** the same row (README "Resuming and reruns").
**
** An entry is the 128-bit hash (XXH3) of a row's identity -- judge, candidate, baseline, item,
** repetition, order -- together with the key of the call it was made from. The key is the hash
** of the exact canonical request (arb__judge_call_key), so a node is taken as recorded only
** when the request it would send now is the one its stored row was judged from: an edited
** item, answer, template or judge sampling changes the key, misses the set, and the node runs
** as before. Template name and option mode are fixed per load (the query filters on them).
** Memory: 16 bytes per entry, at most twice the number of rows.
**
** Also the fingerprint of an sbs plan (arb__sbs_plan_fingerprint), with which a rerun of a
** finished plan on an unchanged store says "nothing to send" without reading its inputs
** (README "Fast resume and bounded memory"), and the plan notes of debate, discuss and persona
** (arb__plan_rerun_if_unchanged, arb__plan_note_run; README "A rerun from a plan note"): their
** fingerprint hashes the parsed records, the run's parameters, probe renderings and call keys.
*/
#define _GNU_SOURCE /* dl_iterate_phdr: this build's GNU build id */
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack: hashing never allocates */
#include "internal.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#if defined(__linux__)
#include <elf.h>
#include <link.h>
#endif

#include <xxhash.h>

/* Low bits of an entry's second word: bit 0 marks a used slot, bit 1 a verdict E. */
#define USED 1u
#define INVALID 2u

struct arb__recorded {
    int options;            /* how verdicts are read (arb_verdict_extract) */
    const char *json_field; /* borrowed during the load only */
    XXH128_hash_t *slots;
    size_t mask; /* capacity - 1 (a power of two) */
    size_t used;
};

/* The identity of a row and its call key, hashed; the two flag bits are cleared. */
static XXH128_hash_t row_hash(const arb__recorded_pairwise *row)
{
    XXH3_state_t state;
    XXH3_INITSTATE(&state);
    XXH3_128bits_reset(&state);
    const char *parts[] = {row->judge_name, row->candidate, row->baseline, row->item_id};
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        XXH3_128bits_update(&state, parts[i], strlen(parts[i]) + 1);
    int coords[2] = {row->rep, row->order};
    XXH3_128bits_update(&state, coords, sizeof coords);
    XXH3_128bits_update(&state, row->call_key, strlen(row->call_key));
    XXH128_hash_t h = XXH3_128bits_digest(&state);
    h.low64 &= ~(XXH64_hash_t)(USED | INVALID);
    return h;
}

static size_t find_slot(const arb__recorded *r, XXH128_hash_t h)
{
    size_t i = (size_t)h.high64 & r->mask;
    while ((r->slots[i].low64 & USED) &&
           (r->slots[i].high64 != h.high64 ||
            (r->slots[i].low64 & ~(XXH64_hash_t)(USED | INVALID)) != h.low64))
        i = (i + 1) & r->mask;
    return i;
}

/* Keeps the load under 3/4; returns 0 or -1 when out of memory. */
static int reserve(arb__recorded *r)
{
    size_t cap = r->slots ? r->mask + 1 : 0;
    if (cap && (r->used + 1) * 4 <= cap * 3) return 0;
    size_t new_cap = cap ? cap * 2 : 1024;
    XXH128_hash_t *slots = calloc(new_cap, sizeof *slots);
    if (!slots) return -1;
    arb__recorded grown = {r->options, r->json_field, slots, new_cap - 1, r->used};
    for (size_t i = 0; i < cap; i++)
        if (r->slots[i].low64 & USED) {
            XXH128_hash_t h = r->slots[i];
            h.low64 &= ~(XXH64_hash_t)(USED | INVALID);
            slots[find_slot(&grown, h)] = r->slots[i];
        }
    free(r->slots);
    *r = grown;
    return 0;
}

static int add_row(void *ud, const arb__recorded_pairwise *row)
{
    arb__recorded *r = ud;
    /* As the protocols' done callbacks read a reply: a row whose reply reads otherwise now is
    ** left to the normal path, which judges the stored reply again and rewrites the row. */
    char now = row->content ? arb_verdict_extract(row->content, strlen(row->content), r->options,
                                                  r->json_field)
                            : 'E';
    if (now != row->position_verdict) return 0;
    if (reserve(r)) return -1;
    XXH128_hash_t h = row_hash(row);
    size_t i = find_slot(r, h);
    if (!(r->slots[i].low64 & USED)) r->used++;
    h.low64 |= USED | (row->position_verdict == 'E' ? INVALID : 0);
    r->slots[i] = h;
    return 0;
}

/* See internal.h. */
arb_status arb__recorded_load_pairwise(arb_store *s, const char *protocol,
                                       const char *template_name, int options,
                                       const char *json_field, arb__recorded **out)
{
    *out = NULL;
    arb__recorded *r = calloc(1, sizeof *r);
    if (!r) return arb__store_fail(s, ARB_NOMEM, "out of memory");
    r->options = options;
    r->json_field = json_field;
    arb_status st =
        arb__store_each_recorded_pairwise(s, protocol, template_name, options, add_row, r);
    r->json_field = NULL;
    if (st) {
        arb__recorded_destroy(r);
        return st;
    }
    *out = r;
    return ARB_OK;
}

/* See internal.h. */
void arb__recorded_destroy(arb__recorded *r)
{
    if (!r) return;
    free(r->slots);
    free(r);
}

/* See internal.h. */
int arb__recorded_has_pairwise(const arb__recorded *r, const arb__recorded_pairwise *row,
                               int *invalid)
{
    *invalid = 0;
    if (!r || !r->used) return 0;
    size_t i = find_slot(r, row_hash(row));
    if (!(r->slots[i].low64 & USED)) return 0;
    *invalid = (r->slots[i].low64 & INVALID) != 0;
    return 1;
}

/* ---- the fingerprint of an sbs plan --------------------------------------------------------- */

/* Bump when what a plan stores changes in a way the probes below do not see and the build has
** no GNU build id (the id changes with any change of the code). */
#define PLAN_FORMAT "arbiter sbs plan 1"

static void put_bytes(XXH3_state_t *h, const void *p, size_t n)
{
    uint64_t len = n;
    XXH3_128bits_update(h, &len, sizeof len);
    if (n) XXH3_128bits_update(h, p, n);
}

static void put_text(XXH3_state_t *h, const char *text)
{
    unsigned char present = text != NULL;
    XXH3_128bits_update(h, &present, 1);
    if (text) put_bytes(h, text, strlen(text));
}

static void put_int(XXH3_state_t *h, long long v) { XXH3_128bits_update(h, &v, sizeof v); }

#if defined(__linux__)
typedef struct build_id {
    const void *inside; /* an address in this library */
    const unsigned char *bytes;
    size_t n;
} build_id;

/* dl_iterate_phdr's callback: the NT_GNU_BUILD_ID note of the object holding b->inside. */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *ud)
{
    (void)size;
    build_id *b = ud;
    uintptr_t at = (uintptr_t)b->inside;
    int mine = 0;
    for (int i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && at >= start && at < start + ph->p_memsz;
    }
    if (!mine) return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE) continue;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        const unsigned char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)(const void *)p;
            size_t name = (nh->n_namesz + 3) & ~(size_t)3, desc = (nh->n_descsz + 3) & ~(size_t)3;
            const unsigned char *d = p + sizeof *nh + name;
            if (d + desc > end) break;
            if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
                !memcmp(p + sizeof *nh, "GNU", 4)) {
                b->bytes = d;
                b->n = nh->n_descsz;
                return 1;
            }
            p = d + desc;
        }
    }
    return 1; /* this object, without a build id */
}
#endif

/* This build's identity: its GNU build id where the linker wrote one, else ARB_VERSION. */
static void put_build(XXH3_state_t *h)
{
    put_text(h, PLAN_FORMAT);
    put_text(h, ARB_VERSION);
#if defined(__linux__)
    static const char anchor = 0; /* an address inside this library */
    build_id b = {&anchor, NULL, 0};
    dl_iterate_phdr(find_build_id, &b);
    put_bytes(h, b.bytes, b.bytes ? b.n : 0);
#endif
}

/* The path as given (the stored items and answers record it as their source) and the file's
** bytes. Returns 0, or -1 with errno set. */
static int put_file(XXH3_state_t *h, const char *path)
{
    put_text(h, path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    enum { BLOCK = 1 << 20 };
    char *buf = malloc(BLOCK);
    if (!buf) {
        close(fd);
        errno = ENOMEM;
        return -1;
    }
    uint64_t total = 0;
    int rc = 0;
    for (;;) {
        ssize_t n = read(fd, buf, BLOCK);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            rc = -1;
            break;
        }
        if (n == 0) break;
        XXH3_128bits_update(h, buf, (size_t)n);
        total += (uint64_t)n;
    }
    int saved = errno;
    free(buf);
    close(fd);
    errno = saved;
    XXH3_128bits_update(h, &total, sizeof total);
    return rc;
}

/* Probe texts with what a request escapes (quote, backslash, controls, non-ASCII), so a change
** in how requests are written changes the probes' call keys. */
static const char probe_question[] = "probe question \"q\" \\ \n\t\x01 \xc3\xa9 \xe4\xb8\xad";
static const char probe_answer1[] = "probe answer 1 \"a\" \\ \r\n\xf0\x9f\x99\x82";
static const char probe_answer2[] = "probe answer 2 </answer> [[B]] \x7f";
static const char probe_reference[] = "probe reference \"r\"";

/* The template rendered with the probe texts in both orders, and each judge's probe request
** per repetition, as call keys. Returns 0, or -1 when out of memory or the template does not
** render (the normal path then says why). */
static int put_requests(XXH3_state_t *h, const arb_sbs_params *p, const arb_judge_config *judges,
                        size_t n_judges, const arb_template *tpl)
{
    put_text(h, arb_template_name(tpl));
    put_text(h, arb_template_json_field(tpl));
    put_text(h, arb_template_response_format(tpl));
    for (int order = 0; order < 2; order++) {
        arb_prompt_vars vars = {.options = p->options,
                                .question = probe_question,
                                .answer1 = order ? probe_answer2 : probe_answer1,
                                .answer2 = order ? probe_answer1 : probe_answer2,
                                .reference = probe_reference,
                                .language = order ? "de" : "en"};
        char *system = NULL, *user = NULL;
        if (arb_template_render(tpl, &vars, &system, &user)) return -1;
        put_text(h, system);
        put_text(h, user);
        int rc = 0;
        for (size_t j = 0; !rc && j < n_judges; j++) {
            put_text(h, judges[j].name);
            for (int rep = 0; rep < p->reps; rep++) {
                char *body = arb__judge_request_body(&judges[j], system, user, rep,
                                                     arb_template_response_format(tpl));
                if (!body) {
                    rc = -1;
                    break;
                }
                char key[33];
                arb__judge_call_key(body, rep, key);
                free(body);
                XXH3_128bits_update(h, key, 32);
            }
        }
        arb_free(system);
        arb_free(user);
        if (rc) return -1;
    }
    return 0;
}

/* See internal.h. */
arb_status arb__sbs_plan_fingerprint(arb_store *s, const char *items_path,
                                     const char *answers_path, const arb_sbs_params *p,
                                     const arb_judge_config *judges, size_t n_judges,
                                     const arb_template *tpl, char out[33])
{
    out[0] = '\0';
    XXH3_state_t h;
    XXH3_INITSTATE(&h);
    XXH3_128bits_reset(&h);
    put_build(&h);
    put_text(&h, p->candidate);
    put_text(&h, p->baseline);
    put_int(&h, p->options);
    put_int(&h, p->reps);
    put_int(&h, (long long)n_judges);
    if (put_requests(&h, p, judges, n_judges, tpl))
        return arb__store_fail(s, ARB_NOMEM, "cannot render the plan's probe requests");
    const char *paths[2] = {items_path, answers_path};
    for (int i = 0; i < 2; i++)
        if (!paths[i] || put_file(&h, paths[i]))
            return arb__store_fail(s, ARB_IO, "%s: %s", paths[i] ? paths[i] : "(no file)",
                                   strerror(errno));
    XXH128_hash_t digest = XXH3_128bits_digest(&h);
    arb__hash128_hex(digest.high64, digest.low64, out);
    return ARB_OK;
}

/* ---- plan notes of debate, discuss and persona ------------------------------------------------ */

int arb__plan_quick_rerun = 1;

/* See internal.h. */
int arb__plan_notes_apply(const arb_client_params *c, int dry_run)
{
    return !dry_run && !c->batch_export && !c->batch_out && c->batch_action == ARB_BATCH_NONE &&
           !(c->budget_usd > 0) && c->budget_tokens <= 0;
}

/* Every record of a dataset held whole (each field, its presence too), or the bytes and paths
** of an indexed one's files. Returns 0, or -1 with errno set. */
static int put_dataset(XXH3_state_t *h, const arb_dataset *ds)
{
    const char *items_path, *answers_path;
    arb__dataset_indexed_paths(ds, &items_path, &answers_path);
    if (items_path) {
        put_int(h, 1);
        if (put_file(h, items_path)) return -1;
        put_text(h, answers_path);
        return answers_path ? put_file(h, answers_path) : 0;
    }
    put_int(h, 0);
    size_t n = arb_dataset_item_count(ds);
    put_int(h, (long long)n);
    for (size_t i = 0; i < n; i++) {
        const arb_item *it = arb_dataset_item(ds, i);
        const char *f[] = {it->id,       it->question,   it->reference,   it->category,
                           it->language, it->group,      it->extra_json,  it->source,
                           it->context,  it->source_text, it->document,   it->dialog};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++) put_text(h, f[k]);
    }
    n = arb_dataset_answer_count(ds);
    put_int(h, (long long)n);
    for (size_t i = 0; i < n; i++) {
        const arb_answer *a = arb_dataset_answer(ds, i);
        const char *f[] = {a->item_id, a->model, a->answer, a->extra_json, a->source};
        for (size_t k = 0; k < sizeof f / sizeof *f; k++) put_text(h, f[k]);
    }
    return 0;
}

/* Each template rendered with a probe text in every placeholder, and each judge's probe request
** per repetition as a call key (model, sampling, seed, logprobs, how this build writes a
** request). Returns 0, or -1 when out of memory or a template does not render. */
static int put_probes(XXH3_state_t *h, const arb__plan_desc *d)
{
    for (size_t t = 0; t < d->n_tpls; t++) {
        const arb_template *tpl = d->tpls[t];
        put_text(h, tpl ? arb_template_name(tpl) : NULL);
        if (!tpl) continue;
        put_text(h, arb_template_json_field(tpl));
        put_text(h, arb_template_response_format(tpl));
        arb_prompt_vars v = {
            .question = probe_question, .answer1 = probe_answer1, .answer2 = probe_answer2,
            .reference = probe_reference, .language = "en",
            .options = d->options >= 2 && d->options <= 4 ? d->options : 4,
            .agent1 = "probe {agent1}", .agent2 = "probe {agent2}", .self = "probe {self}",
            .other = "probe {other}", .reviews = "probe {reviews}",
            .discussion = "probe {discussion}", .answer = "probe {answer}",
            .task = "probe {task}", .task_input = "probe {task_input}",
            .scenario = "probe {scenario}", .response = "probe {response}",
            .identity = "probe {identity}", .candidate1 = "probe {candidate1}",
            .candidate2 = "probe {candidate2}", .identity1 = "probe {identity1}",
            .identity2 = "probe {identity2}", .metrics_json = "probe {metrics_json}",
            .range = "probe {range}"};
        char *system = NULL, *user = NULL;
        if (arb_template_render(tpl, &v, &system, &user)) return -1;
        put_text(h, system);
        put_text(h, user);
        arb_free(system);
        arb_free(user);
    }
    put_int(h, (long long)d->n_judges);
    for (size_t j = 0; j < d->n_judges; j++) {
        put_text(h, d->judges[j].name);
        for (int rep = 0; rep < d->reps; rep++) {
            char *body = arb__judge_request_body(&d->judges[j], probe_reference, probe_question,
                                                 rep, NULL);
            if (!body) return -1;
            char key[33];
            arb__judge_call_key(body, rep, key);
            free(body);
            XXH3_128bits_update(h, key, 32);
        }
    }
    return 0;
}

/* The fingerprint of d in out ("" when none can be made: a dataset with neither records nor
** files). Returns ARB_OK, or an error (message in s). */
static arb_status plan_fingerprint(arb_store *s, const arb__plan_desc *d, char out[33])
{
    out[0] = '\0';
    if (!d->ds || !d->params_json || !d->protocol) return ARB_OK;
    XXH3_state_t h;
    XXH3_INITSTATE(&h);
    XXH3_128bits_reset(&h);
    put_build(&h);
    put_text(&h, "dependent plan 1");
    put_text(&h, d->protocol);
    put_text(&h, d->params_json);
    put_int(&h, d->options);
    put_int(&h, d->reps);
    put_int(&h, (long long)d->n_items);
    const arb__plan_scope *sc = &d->scope;
    put_text(&h, sc->dialogue_kind);
    put_text(&h, sc->pairwise_protocol);
    put_int(&h, sc->persona);
    if (put_probes(&h, d))
        return arb__store_fail(s, ARB_NOMEM, "cannot render the plan's probe requests");
    if (put_dataset(&h, d->ds)) return arb__store_fail(s, ARB_IO, "%s", strerror(errno));
    XXH128_hash_t digest = XXH3_128bits_digest(&h);
    arb__hash128_hex(digest.high64, digest.low64, out);
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__plan_rerun_if_unchanged(arb_store *s, const arb__plan_desc *d,
                                        const arb_client_params *client, int dry_run,
                                        char fingerprint[33], int *unchanged,
                                        arb_run_stats *stats)
{
    *unchanged = 0;
    fingerprint[0] = '\0';
    if (!arb__plan_notes_apply(client, dry_run)) return ARB_OK;
    double t0 = arb__now_ms();
    arb_status st = plan_fingerprint(s, d, fingerprint);
    if (st || !fingerprint[0] || d->full_check || !arb__plan_quick_rerun) return st;
    long long since = 0;
    arb__plan_note note;
    if ((st = arb__store_find_plan(s, d->protocol, fingerprint, &since, &note)) || !since)
        return st;
    if (note.n_items != d->n_items || note.skipped > note.planned) return ARB_OK;
    arb__plan_state now;
    if ((st = arb__store_plan_state(s, &d->scope, &now))) return st;
    if (now.judgments != note.state.judgments || strcmp(now.digest, note.state.digest))
        return ARB_OK;
    stats->unchanged_since_run = since;
    if ((st = arb__plan_record_unchanged(s, d->protocol, d->params_json, d->judges, d->n_judges,
                                         &note, t0, stats)))
        return st;
    *unchanged = 1;
    return ARB_OK;
}

/* See internal.h. */
arb_status arb__plan_record_unchanged(arb_store *s, const char *protocol, const char *params_json,
                                      const arb_judge_config *judges, size_t n_judges,
                                      const arb__plan_note *note, double t0, arb_run_stats *stats)
{
    /* As a rerun that checks every call records itself: the judges (their URL may be new),
    ** then a finished run with its parameters, stats and the note. */
    arb_status st = ARB_OK;
    for (size_t j = 0; j < n_judges; j++)
        if ((st = arb__store_put_judge(s, &judges[j]))) return st;
    long long run_id = 0;
    if ((st = arb__store_run_begin(s, protocol, params_json, &run_id))) return st;
    stats->planned = note->planned;
    stats->skipped = note->skipped;
    stats->cached = note->planned - note->skipped;
    stats->invalid = note->invalid;
    stats->seconds = (arb__now_ms() - t0) / 1e3;
    if ((st = arb__store_run_end(s, run_id, stats, ARB__RUN_FINISHED))) return st;
    return arb__store_run_set_plan(s, run_id, note);
}

/* See internal.h. */
arb_status arb__plan_note_run(arb_store *s, const arb__plan_desc *d, const char *fingerprint,
                              long long run_id, const arb_run_stats *stats)
{
    if (!fingerprint || !fingerprint[0] || run_id <= 0) return ARB_OK;
    if (!stats->planned || stats->failed || stats->not_sent ||
        stats->cached + stats->sent + stats->skipped != stats->planned)
        return ARB_OK;
    int overlapped = 0;
    arb_status st = arb__store_run_overlapped(s, run_id, &overlapped);
    if (st || overlapped) return st; /* another run wrote meanwhile: the next run checks all */
    arb__plan_note note = {.planned = stats->planned, .invalid = stats->invalid,
                           .n_items = d->n_items, .skipped = stats->skipped};
    snprintf(note.fingerprint, sizeof note.fingerprint, "%s", fingerprint);
    if ((st = arb__store_plan_state(s, &d->scope, &note.state))) return st;
    return arb__store_run_set_plan(s, run_id, &note);
}
