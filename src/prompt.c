/*
** prompt.c -- prompt templates (METHODS §2.3): loading, checking and rendering.
**
** A template is UTF-8 text. Lines starting with "#!" at the very top are settings
** ("#! key: value"; known keys: description, verdict_json_field, response_format). The rest is
** the body: a line
** "=== system ===" starts the system message and "=== user ===" the user message; without such
** lines the whole body is the user message. Blank lines at the start of a section and white
** space at its end are dropped. {name} is a placeholder; "{{" and "}}" are literal braces.
** Known placeholders: question, answer1, answer2, reference, language, option_list,
** option_letters, option_rules, and for multi-agent templates agent1, agent2 (debate: the
** earlier agents' replies), self, other, reviews, discussion (peer discussion), and for
** pointwise templates (METHODS §8) answer (the one answer judged), task and task_input (the
** task's inputs, each between labelled START/END lines), and for persona-bias templates
** (METHODS §9) scenario, response (phase 1), candidate1, candidate2 (phase 2), identity,
** identity1, identity2 (the identities the responses are attributed to), metrics_json (the
** reply object asked for, e.g. {"creativity": n, ...}) and range (e.g. "0 to 10"). Anything else (an unknown name or setting, an unbalanced
** brace, text before the first section line, an empty user message) is an error reported as
** "path:line: ...", so a typo fails at load time instead of sending a broken prompt.
**
** Built-in templates (the .txt files of templates/, embedded at build time as
** arb__builtin_templates) follow one convention that the simulated judge and the tests rely
** on; user templates should too. The answers are delimited exactly like this, each marker on
** its own line:
**     [ANSWER 1 START]
**     {answer1}
**     [ANSWER 1 END]
** and the same with 2; the question with [QUESTION START] / [QUESTION END]; the reference with
** [REFERENCE START] / [REFERENCE END]. Model names never appear in a prompt. A pointwise
** template shows the answer judged between [ANSWER START] and [ANSWER END], names the
** evaluation language on a line "Evaluation language: {language}" and asks for the value with
** the phrase "<answer>correct</answer> or <answer>incorrect</answer>" (yes/no) or
** "<answer>N</answer> with N from 1 to 5" (grades): the simulated judge recognises a pointwise
** request by these lines.
**
** Invariants: a loaded template is immutable, so one template can be rendered from many threads
** at once. Each section is split at load time into literal runs and placeholders; rendering
** sums the lengths, allocates once and copies.
** Not done here: choosing the template for a protocol, or parsing the judge's reply (verdict.c).
*/
#include "internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum {
    PH_QUESTION,
    PH_ANSWER1,
    PH_ANSWER2,
    PH_REFERENCE,
    PH_LANGUAGE,
    PH_OPTION_LIST,
    PH_OPTION_LETTERS,
    PH_OPTION_RULES,
    PH_AGENT1,
    PH_AGENT2,
    PH_SELF,
    PH_OTHER,
    PH_REVIEWS,
    PH_DISCUSSION,
    PH_ANSWER,
    PH_TASK,
    PH_TASK_INPUT,
    PH_SCENARIO,
    PH_RESPONSE,
    PH_IDENTITY,
    PH_CANDIDATE1,
    PH_CANDIDATE2,
    PH_IDENTITY1,
    PH_IDENTITY2,
    PH_METRICS_JSON,
    PH_RANGE,
    PH_COUNT
};

static const char *const placeholder_names[PH_COUNT] = {
    "question",       "answer1",     "answer2",     "reference",
    "language",       "option_list", "option_letters", "option_rules",
    "agent1",         "agent2",      "self",           "other",
    "reviews",        "discussion",  "answer",         "task",
    "task_input",     "scenario",    "response",    "identity",
    "candidate1",     "candidate2",  "identity1",   "identity2",
    "metrics_json",   "range",
};
#define KNOWN_PLACEHOLDERS                                                                      \
    "question, answer1, answer2, reference, language, option_list, option_letters, option_rules, " \
    "agent1, agent2, self, other, reviews, discussion, answer, task, task_input, scenario, "     \
    "response, identity, candidate1, candidate2, identity1, identity2, metrics_json, range"

/* What the option placeholders render to in 2-, 3- and 4-option mode (§2.1). The rules speak
** of "answer 1" and "answer 2" as the delimiters do; D carries the strictness of Prompt I:
** any error, even a minor one, in both answers makes them both bad. */
static const char *const option_lists[3] = {
    "[[A]] or [[B]]",
    "[[A]], [[B]] or [[C]]",
    "[[A]], [[B]], [[C]] or [[D]]",
};
static const char *const option_letters[3] = {"A or B", "A, B or C", "A, B, C or D"};
static const char *const option_rules[3] = {
    "A: answer 1 is better than answer 2, even if only slightly.\n"
    "B: answer 2 is better than answer 1, even if only slightly.",

    "A: answer 1 is better than answer 2.\n"
    "B: answer 2 is better than answer 1.\n"
    "C: neither answer is better than the other (a tie).",

    "A: answer 1 is better than answer 2.\n"
    "B: answer 2 is better than answer 1.\n"
    "C: both answers are good and equally so: each is correct and fully does what was asked.\n"
    "D: both answers are bad: each contains at least one error, even a minor one; choose D "
    "over A or B whenever both answers have errors.",
};

/* One run of the section: a literal of len bytes at pool + off, or a placeholder. A literal
** also has its JSON-escaped form, json_len bytes at json_pool + json_off, and its length in
** code points as arb__buf_json_chars_counted counts it (json_chars, -1: left to the store). */
typedef struct part {
    int placeholder; /* PH_*, or -1 for a literal */
    size_t off, len;
    size_t json_off, json_len;
    long long json_chars;
} part;

typedef struct section {
    int present;
    part *parts;
    size_t n_parts, cap_parts;
    unsigned uses; /* bit i set when placeholder i occurs in this section */
} section;

struct arb_template {
    char *name;
    char *description;
    char *json_field;
    char *response_format; /* the json_schema object, canonical JSON (ARB__JUDGE_DUMP_FLAGS) */
    size_t response_format_line;
    char *pool; /* literal text of both sections */
    char *json_pool; /* the literals JSON-escaped (no quotes), for arb__template_put_json */
    size_t json_total; /* bytes of json_pool */
    /* the option placeholders' texts JSON-escaped, per option mode (2..4), when used */
    char *option_json[3][3];
    long long option_chars[3][3]; /* their code points, counted as a literal's json_chars */
    section system, user;
    unsigned uses; /* bit i set when placeholder i occurs */
};

/* ---- built-in names ---------------------------------------------------------------------- */

static const char *builtin_names[64];
static pthread_once_t builtin_names_once = PTHREAD_ONCE_INIT;

/* Lists the names sorted (the embedded table follows file-name order, where "II-fact-reason"
** comes before "II-fact"), so "I, II, II-fact, II-fact-reason, II-reason" reads naturally. */
static void fill_builtin_names(void)
{
    size_t n = 0;
    for (const arb__builtin_template *b = arb__builtin_templates;
         b->name && n + 1 < sizeof builtin_names / sizeof builtin_names[0]; b++) {
        size_t i = n++;
        for (; i > 0 && strcmp(builtin_names[i - 1], b->name) > 0; i--)
            builtin_names[i] = builtin_names[i - 1];
        builtin_names[i] = b->name;
    }
    builtin_names[n] = NULL;
}

/* Returns the names of the built-in templates, NULL-terminated (static storage). */
const char *const *arb_template_builtin_names(void)
{
    pthread_once(&builtin_names_once, fill_builtin_names);
    return builtin_names;
}

static const char *find_builtin(const char *name)
{
    for (const arb__builtin_template *b = arb__builtin_templates; b->name; b++)
        if (strcmp(b->name, name) == 0) return b->text;
    return NULL;
}

/* ---- parsing ----------------------------------------------------------------------------- */

typedef struct parser {
    const char *path; /* for messages */
    arb__buf pool;
    char *err;        /* first error, "path:line: ..." */
    int nomem;
} parser;

static int perr(parser *p, size_t line, const char *fmt, ...) ARB__ATTR_PRINTF(3, 4);
static int perr(parser *p, size_t line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *what = arb__vsprintf(fmt, ap);
    va_end(ap);
    if (what) p->err = arb__sprintf("%s:%zu: %s", p->path, line, what);
    free(what);
    if (!p->err) p->nomem = 1;
    return -1;
}

static int add_part(parser *p, section *s, int placeholder, size_t off, size_t len)
{
    if (s->n_parts == s->cap_parts) {
        size_t cap = s->cap_parts ? s->cap_parts * 2 : 16;
        part *np = realloc(s->parts, cap * sizeof *np);
        if (!np) {
            p->nomem = 1;
            return -1;
        }
        s->parts = np;
        s->cap_parts = cap;
    }
    s->parts[s->n_parts++] = (part){placeholder, off, len, 0, 0, 0};
    return 0;
}

/* Appends literal bytes, extending the previous literal run when there is one: the pool grows
** in order, so the last literal run always ends where the pool ends. */
static int add_literal(parser *p, section *s, const char *bytes, size_t n)
{
    if (!n) return 0;
    size_t off = p->pool.len;
    if (arb__buf_append(&p->pool, bytes, n)) {
        p->nomem = 1;
        return -1;
    }
    if (s->n_parts && s->parts[s->n_parts - 1].placeholder < 0) {
        s->parts[s->n_parts - 1].len += n;
        return 0;
    }
    return add_part(p, s, -1, off, n);
}

static int is_name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '_';
}

/* Splits one body line into literal runs and placeholders. */
static int parse_line(parser *p, arb_template *t, section *s, const char *line, size_t n,
                      size_t line_no)
{
    size_t lit = 0; /* start of the pending literal */
    for (size_t i = 0; i < n;) {
        char c = line[i];
        if (c != '{' && c != '}') {
            i++;
            continue;
        }
        if (add_literal(p, s, line + lit, i - lit)) return -1;
        if (i + 1 < n && line[i + 1] == c) { /* "{{" or "}}" */
            if (add_literal(p, s, line + i, 1)) return -1;
            i += 2;
            lit = i;
            continue;
        }
        if (c == '}') return perr(p, line_no, "unbalanced '}' (write }} for a literal brace)");
        size_t e = i + 1;
        while (e < n && is_name_char(line[e])) e++;
        if (e == n || line[e] != '}' || e == i + 1)
            return perr(p, line_no, "unbalanced '{' (write {{ for a literal brace)");
        size_t name_len = e - i - 1;
        int ph = -1;
        for (int k = 0; k < PH_COUNT; k++)
            if (strlen(placeholder_names[k]) == name_len &&
                memcmp(placeholder_names[k], line + i + 1, name_len) == 0)
                ph = k;
        if (ph < 0)
            return perr(p, line_no, "unknown placeholder {%.*s} (known: " KNOWN_PLACEHOLDERS ")",
                        (int)name_len, line + i + 1);
        if (add_part(p, s, ph, 0, 0)) return -1;
        t->uses |= 1u << ph;
        s->uses |= 1u << ph;
        i = e + 1;
        lit = i;
    }
    return add_literal(p, s, line + lit, n - lit);
}

/* A line of the text: [b, e) without its line end, and its number. */
typedef struct line_ref {
    size_t b, e, no;
} line_ref;

static int is_blank(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] != ' ' && s[i] != '\t') return 0;
    return 1;
}

/* Recognises "=== name ===" (surrounding white space allowed). Returns 1 and the name's range
** when the line has that shape. */
static int section_line(const char *s, size_t n, size_t *nb, size_t *ne)
{
    size_t b = 0, e = n;
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
    if (e - b < 7 || memcmp(s + b, "===", 3) != 0 || memcmp(s + e - 3, "===", 3) != 0) return 0;
    b += 3;
    e -= 3;
    while (b < e && (s[b] == ' ' || s[b] == '\t')) b++;
    while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t')) e--;
    if (b == e) return 0;
    for (size_t i = b; i < e; i++)
        if (!is_name_char(s[i])) return 0;
    *nb = b;
    *ne = e;
    return 1;
}

/* Parses lines [first, last) of text as the content of section s. */
static int parse_section(parser *p, arb_template *t, section *s, const char *text,
                         const line_ref *lines, size_t first, size_t last)
{
    s->present = 1;
    while (first < last && is_blank(text + lines[first].b, lines[first].e - lines[first].b))
        first++;
    for (size_t i = first; i < last; i++) {
        if (i > first && add_literal(p, s, "\n", 1)) return -1;
        if (parse_line(p, t, s, text + lines[i].b, lines[i].e - lines[i].b, lines[i].no))
            return -1;
    }
    /* Drop white space at the end: a trailing literal run shrinks (the pool keeps the bytes). */
    while (s->n_parts && s->parts[s->n_parts - 1].placeholder < 0) {
        part *last_part = &s->parts[s->n_parts - 1];
        const char *lit = p->pool.data + last_part->off;
        while (last_part->len && (lit[last_part->len - 1] == ' ' ||
                                  lit[last_part->len - 1] == '\t' ||
                                  lit[last_part->len - 1] == '\n'))
            last_part->len--;
        if (last_part->len) break;
        s->n_parts--;
    }
    return 0;
}

/* "#! response_format: {...}": the json_schema object of OpenAI's structured output, on one
** line: "name" (1 to 64 of A-Z a-z 0-9 _ -), "schema" (an object), and optionally "strict"
** (boolean) and "description" (string). Kept as canonical JSON, so the request body (and the
** call key) is a function of the schema, not of how the line was spaced. */
static int parse_response_format(parser *p, arb_template *t, const char *v, size_t n,
                                 size_t line_no)
{
    static const char expected[] = "expected a JSON object {\"name\": ..., \"schema\": {...}} "
                                   "(optional \"strict\", \"description\") on one line";
    json_error_t jerr;
    json_t *o = json_loadb(v, n, JSON_REJECT_DUPLICATES, &jerr);
    int rc = -1;
    if (!json_is_object(o)) {
        perr(p, line_no, "setting \"response_format\": %s%s%s", expected,
             o ? "" : "; JSON: ", o ? "" : jerr.text);
        goto done;
    }
    const char *key;
    json_t *val;
    json_object_foreach(o, key, val) {
        if (strcmp(key, "name") && strcmp(key, "schema") && strcmp(key, "strict") &&
            strcmp(key, "description")) {
            perr(p, line_no, "setting \"response_format\": unknown key \"%.64s\"; %s", key,
                 expected);
            goto done;
        }
    }
    const char *name = json_string_value(json_object_get(o, "name"));
    size_t name_len = name ? strlen(name) : 0;
    if (!name || !name_len || name_len > 64 ||
        name[strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")]) {
        perr(p, line_no, "setting \"response_format\": \"name\" must be 1 to 64 letters, "
                         "digits, '_' or '-'");
        goto done;
    }
    if (!json_is_object(json_object_get(o, "schema"))) {
        perr(p, line_no, "setting \"response_format\": \"schema\" must be a JSON object "
                         "(a JSON Schema)");
        goto done;
    }
    json_t *strict = json_object_get(o, "strict");
    json_t *description = json_object_get(o, "description");
    if ((strict && !json_is_boolean(strict)) || (description && !json_is_string(description))) {
        perr(p, line_no, "setting \"response_format\": \"strict\" must be true or false and "
                         "\"description\" a string");
        goto done;
    }
    if (!(t->response_format = json_dumps(o, ARB__JUDGE_DUMP_FLAGS))) {
        p->nomem = 1;
        goto done;
    }
    rc = 0;
done:
    json_decref(o);
    return rc;
}

/* A template that asks for a JSON schema and judges a pair must say where the verdict is, and
** the schema, when it lists properties, must have that field. Returns 0 or -1 (p->err). */
static int check_response_format(parser *p, const arb_template *t)
{
    if (!t->response_format) return 0;
    int pairwise = (t->uses >> PH_ANSWER1 & 1u) || (t->uses >> PH_ANSWER2 & 1u);
    if (pairwise && !t->json_field)
        return perr(p, t->response_format_line,
                    "setting \"response_format\" needs \"#! verdict_json_field: NAME\" in a "
                    "template that judges a pair: the verdict is read from that JSON field");
    if (!t->json_field) return 0;
    json_t *o = json_loads(t->response_format, 0, NULL);
    json_t *props = json_object_get(json_object_get(o, "schema"), "properties");
    int missing = json_is_object(props) && !json_object_get(props, t->json_field);
    json_decref(o);
    if (missing)
        return perr(p, t->response_format_line,
                    "setting \"response_format\": the schema's properties have no \"%s\" "
                    "(the verdict_json_field)", t->json_field);
    return 0;
}

static int parse_setting(parser *p, arb_template *t, const char *s, size_t n, size_t line_no)
{
    size_t i = 2; /* after "#!" */
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    size_t kb = i;
    while (i < n && is_name_char(s[i])) i++;
    size_t ke = i;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    if (ke == kb || i == n || s[i] != ':')
        return perr(p, line_no, "malformed setting (expected \"#! key: value\")");
    i++;
    while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
    size_t ve = n;
    while (ve > i && (s[ve - 1] == ' ' || s[ve - 1] == '\t')) ve--;

    char **slot;
    if (ke - kb == 11 && memcmp(s + kb, "description", 11) == 0) {
        slot = &t->description;
    } else if (ke - kb == 18 && memcmp(s + kb, "verdict_json_field", 18) == 0) {
        slot = &t->json_field;
        if (ve == i) return perr(p, line_no, "setting \"verdict_json_field\" needs a value");
    } else if (ke - kb == 15 && memcmp(s + kb, "response_format", 15) == 0) {
        if (t->response_format)
            return perr(p, line_no, "setting \"response_format\" given twice");
        t->response_format_line = line_no;
        return parse_response_format(p, t, s + i, ve - i, line_no);
    } else {
        return perr(p, line_no,
                    "unknown setting \"%.*s\" (known: description, verdict_json_field, "
                    "response_format)",
                    (int)(ke - kb), s + kb);
    }
    if (*slot)
        return perr(p, line_no, "setting \"%.*s\" given twice", (int)(ke - kb), s + kb);
    if (!(*slot = arb__strndup(s + i, ve - i))) {
        p->nomem = 1;
        return -1;
    }
    return 0;
}

/* Parses the whole text into t. Returns 0, or -1 with p->err or p->nomem set. */
static int parse_template(parser *p, arb_template *t, const char *text, size_t len)
{
    int rc = -1;
    line_ref *lines = NULL;
    size_t n_lines = 0, cap = 0;

    /* Rendered prompts are C strings sent as JSON: a NUL or a bad byte cannot go through. */
    size_t bad = len;
    if (!arb__utf8_valid(text, len, &bad)) bad = bad < len ? bad : len;
    const char *nul = memchr(text, '\0', len);
    if (nul && (size_t)(nul - text) < bad) bad = (size_t)(nul - text);
    if (bad < len) {
        size_t line_no = 1;
        for (size_t k = 0; k < bad; k++) line_no += text[k] == '\n';
        perr(p, line_no, "invalid UTF-8 or NUL byte");
        goto done;
    }
    size_t pos = len >= 3 && memcmp(text, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    for (size_t no = 1; pos < len || (pos == len && n_lines == 0); no++) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t e = nl ? (size_t)(nl - text) : len;
        if (n_lines == cap) {
            cap = cap ? cap * 2 : 64;
            line_ref *nlines = realloc(lines, cap * sizeof *nlines);
            if (!nlines) {
                p->nomem = 1;
                goto done;
            }
            lines = nlines;
        }
        lines[n_lines++] = (line_ref){pos, e > pos && text[e - 1] == '\r' ? e - 1 : e, no};
        pos = e + 1;
        if (!nl) break;
    }

    size_t i = 0;
    for (; i < n_lines && lines[i].e - lines[i].b >= 2 && memcmp(text + lines[i].b, "#!", 2) == 0;
         i++)
        if (parse_setting(p, t, text + lines[i].b, lines[i].e - lines[i].b, lines[i].no))
            goto done;

    /* Sections: find the marker lines, then parse the ranges between them. */
    size_t body = i, start = i;
    section *current = NULL;
    for (; i < n_lines; i++) {
        size_t nb, ne;
        const char *s = text + lines[i].b;
        if (!section_line(s, lines[i].e - lines[i].b, &nb, &ne)) continue;
        section *next;
        if (ne - nb == 6 && memcmp(s + nb, "system", 6) == 0) next = &t->system;
        else if (ne - nb == 4 && memcmp(s + nb, "user", 4) == 0) next = &t->user;
        else {
            perr(p, lines[i].no, "unknown section \"=== %.*s ===\" (known: system, user)",
                 (int)(ne - nb), s + nb);
            goto done;
        }
        if (next->present) {
            perr(p, lines[i].no, "section \"=== %.*s ===\" given twice", (int)(ne - nb), s + nb);
            goto done;
        }
        if (!current) {
            for (size_t k = body; k < i; k++)
                if (!is_blank(text + lines[k].b, lines[k].e - lines[k].b)) {
                    perr(p, lines[k].no, "text before the first section line");
                    goto done;
                }
        } else if (parse_section(p, t, current, text, lines, start, i)) {
            goto done;
        }
        current = next;
        start = i + 1;
        current->present = 1;
    }
    if (parse_section(p, t, current ? current : &t->user, text, lines, start, n_lines))
        goto done;
    if (t->system.n_parts == 0) t->system.present = 0; /* an empty system part is no part */
    if (t->user.n_parts == 0) {
        perr(p, n_lines ? lines[n_lines - 1].no : 1, "the template has no user message");
        goto done;
    }
    if (check_response_format(p, t)) goto done;
    rc = 0;
done:
    free(lines);
    return rc;
}

/* ---- the template object ----------------------------------------------------------------- */

void arb_template_destroy(arb_template *tpl)
{
    if (!tpl) return;
    free(tpl->name);
    free(tpl->description);
    free(tpl->json_field);
    free(tpl->response_format);
    free(tpl->pool);
    free(tpl->json_pool);
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 3; k++) free(tpl->option_json[m][k]);
    free(tpl->system.parts);
    free(tpl->user.parts);
    free(tpl);
}

/* Escapes every literal run once, at load: a request body (judge.c) then copies the escaped
** literals and escapes only the values, instead of escaping the whole rendered prompt -- the
** template's text, most of a typical prompt -- again for every call. Escaping is byte by byte
** (the text is valid UTF-8 without NUL, parse_template checks), so the escaped literals and
** values joined are exactly the escaped rendered text. Returns 0, or -1 when out of memory. */
static int escape_literals(arb_template *t)
{
    arb__buf json, one;
    arb__buf_init(&json, 0);
    arb__buf_init(&one, 0);
    section *sections[2] = {&t->system, &t->user};
    int rc = -1;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sections[k]->n_parts; i++) {
            part *pt = &sections[k]->parts[i];
            if (pt->placeholder >= 0) continue;
            arb__buf_reset(&one);
            pt->json_chars = 0;
            if (arb__buf_json_chars_counted(&one, t->pool + pt->off, pt->len, &pt->json_chars))
                goto done;
            pt->json_off = json.len;
            pt->json_len = one.len;
            if (arb__buf_append(&json, one.data, pt->json_len)) goto done;
        }
    /* The option placeholders' texts are fixed per option mode: escaped once too. */
    static const char *const *const option_texts[3] = {option_lists, option_letters, option_rules};
    for (int m = 0; m < 3; m++)
        for (int k = 0; k < 3; k++) {
            if (!((t->uses >> (PH_OPTION_LIST + k)) & 1u)) continue;
            arb__buf_reset(&one);
            const char *text = option_texts[k][m];
            t->option_chars[m][k] = 0;
            if (arb__buf_json_chars_counted(&one, text, strlen(text), &t->option_chars[m][k]) ||
                !(t->option_json[m][k] = arb__strdup(one.data ? one.data : "")))
                goto done;
        }
    t->json_total = json.len;
    t->json_pool = arb__buf_steal(&json);
    rc = t->json_pool ? 0 : -1;
done:
    arb__buf_free(&json);
    arb__buf_free(&one);
    return rc;
}

static arb_status set_err(char **errmsg, arb_status st, char *msg)
{
    if (errmsg) *errmsg = msg;
    else free(msg);
    return st;
}

/* Loads a built-in by name or, failing that, the file at name_or_path (a name containing '/'
** is always a path; a built-in name wins over a file of the same name in the current
** directory, so "I" always means Prompt I). On success *out is owned by the caller
** (arb_template_destroy). On failure *out is NULL and *errmsg (when not NULL) gets a message
** owned by the caller: ARB_NOTFOUND for an unknown name, ARB_IO for an unreadable file,
** ARB_PARSE for a bad template ("path:line: ..."). */
arb_status arb_template_load(const char *name_or_path, arb_template **out, char **errmsg)
{
    if (errmsg) *errmsg = NULL;
    if (!out) return ARB_INVALID;
    *out = NULL;
    if (!name_or_path || !*name_or_path)
        return set_err(errmsg, ARB_INVALID, arb__strdup("no template name given"));

    arb_status st = ARB_NOMEM;
    char *file_text = NULL;
    const char *text = strchr(name_or_path, '/') ? NULL : find_builtin(name_or_path);
    size_t len;
    parser p = {name_or_path, {0}, NULL, 0};
    arb__buf_init(&p.pool, 0);
    arb_template *t = calloc(1, sizeof *t);
    if (!t) goto done;

    if (text) {
        len = strlen(text);
    } else {
        struct stat sb;
        if (stat(name_or_path, &sb) != 0) {
            arb__buf names;
            arb__buf_init(&names, 0);
            for (const char *const *n = arb_template_builtin_names(); *n; n++)
                if (arb__buf_printf(&names, "%s%s", n == arb_template_builtin_names() ? "" : ", ",
                                    *n))
                    break;
            set_err(errmsg, ARB_NOTFOUND,
                    arb__sprintf("unknown template \"%s\": not a built-in (%s) nor a file",
                                 name_or_path, names.data ? names.data : ""));
            arb__buf_free(&names);
            st = ARB_NOTFOUND;
            goto done;
        }
        char *ioerr = NULL;
        file_text = arb__read_file(name_or_path, &len, &ioerr);
        if (!file_text) {
            st = ioerr ? ARB_IO : ARB_NOMEM;
            set_err(errmsg, st, ioerr);
            goto done;
        }
        text = file_text;
    }
    if (!(t->name = arb__strdup(name_or_path))) goto done;
    if (parse_template(&p, t, text, len)) {
        if (p.nomem) goto done;
        st = set_err(errmsg, ARB_PARSE, p.err);
        p.err = NULL;
        goto done;
    }
    t->pool = arb__buf_steal(&p.pool);
    if (!t->pool || escape_literals(t)) goto done;
    *out = t;
    t = NULL;
    st = ARB_OK;
done:
    if (st == ARB_NOMEM) set_err(errmsg, st, arb__strdup("out of memory"));
    free(p.err);
    arb__buf_free(&p.pool);
    free(file_text);
    arb_template_destroy(t);
    return st;
}

/* Returns the name the template was loaded by (built-in name or path; owned by tpl). */
const char *arb_template_name(const arb_template *tpl) { return tpl ? tpl->name : NULL; }

int arb_template_uses(const arb_template *tpl, const char *placeholder)
{
    if (!tpl || !placeholder) return 0;
    for (int k = 0; k < PH_COUNT; k++)
        if (strcmp(placeholder_names[k], placeholder) == 0) return (tpl->uses >> k) & 1u;
    return 0;
}

/* Returns the "#! verdict_json_field" setting (owned by tpl), or NULL when not set. */
const char *arb_template_json_field(const arb_template *tpl)
{
    return tpl ? tpl->json_field : NULL;
}

/* Returns the "#! response_format" setting as canonical JSON (owned by tpl), or NULL. */
const char *arb_template_response_format(const arb_template *tpl)
{
    return tpl ? tpl->response_format : NULL;
}

/* ---- rendering --------------------------------------------------------------------------- */

typedef struct value {
    const char *s;
    size_t n;
} value;

static void fill_values(unsigned uses, const arb_prompt_vars *vars, value *values);

static char *render_section(const arb_template *tpl, const section *s, const value *values)
{
    size_t total = 1;
    for (size_t i = 0; i < s->n_parts; i++)
        total += s->parts[i].placeholder < 0 ? s->parts[i].len : values[s->parts[i].placeholder].n;
    char *out = malloc(total), *w = out;
    if (!out) return NULL;
    for (size_t i = 0; i < s->n_parts; i++) {
        const part *pt = &s->parts[i];
        const char *src = pt->placeholder < 0 ? tpl->pool + pt->off : values[pt->placeholder].s;
        size_t n = pt->placeholder < 0 ? pt->len : values[pt->placeholder].n;
        memcpy(w, src, n);
        w += n;
    }
    *w = '\0';
    return out;
}

/* Renders both messages. Returns ARB_INVALID for a NULL argument or options outside 2..4,
** ARB_NOMEM, or ARB_OK with *user_out and *system_out (NULL when the template has no system
** part) owned by the caller (arb_free). Values are borrowed; NULL renders as empty text. */
arb_status arb_template_render(const arb_template *tpl, const arb_prompt_vars *vars,
                               char **system_out, char **user_out)
{
    if (system_out) *system_out = NULL;
    if (user_out) *user_out = NULL;
    if (!tpl || !vars || !system_out || !user_out) return ARB_INVALID;
    if (vars->options < 2 || vars->options > 4) return ARB_INVALID;
    value values[PH_COUNT];
    fill_values(tpl->uses, vars, values);
    char *system = NULL;
    if (tpl->system.present && !(system = render_section(tpl, &tpl->system, values)))
        return ARB_NOMEM;
    char *user = render_section(tpl, &tpl->user, values);
    if (!user) {
        free(system);
        return ARB_NOMEM;
    }
    *system_out = system;
    *user_out = user;
    return ARB_OK;
}

/* The placeholders' values for vars (options in 2..4): lengths only for the ones tpl uses. */
/* The values of the placeholders in uses (a bit per placeholder) with their lengths; the
** others are empty. */
static void fill_values(unsigned uses, const arb_prompt_vars *vars, value *values)
{
    const char *texts[PH_COUNT] = {
        [PH_QUESTION] = vars->question,
        [PH_ANSWER1] = vars->answer1,
        [PH_ANSWER2] = vars->answer2,
        [PH_REFERENCE] = vars->reference,
        [PH_LANGUAGE] = vars->language,
        [PH_OPTION_LIST] = option_lists[vars->options - 2],
        [PH_OPTION_LETTERS] = option_letters[vars->options - 2],
        [PH_OPTION_RULES] = option_rules[vars->options - 2],
        [PH_AGENT1] = vars->agent1,
        [PH_AGENT2] = vars->agent2,
        [PH_SELF] = vars->self,
        [PH_OTHER] = vars->other,
        [PH_REVIEWS] = vars->reviews,
        [PH_DISCUSSION] = vars->discussion,
        [PH_ANSWER] = vars->answer,
        [PH_TASK] = vars->task,
        [PH_TASK_INPUT] = vars->task_input,
        [PH_SCENARIO] = vars->scenario,
        [PH_RESPONSE] = vars->response,
        [PH_IDENTITY] = vars->identity,
        [PH_CANDIDATE1] = vars->candidate1,
        [PH_CANDIDATE2] = vars->candidate2,
        [PH_IDENTITY1] = vars->identity1,
        [PH_IDENTITY2] = vars->identity2,
        [PH_METRICS_JSON] = vars->metrics_json,
        [PH_RANGE] = vars->range,
    };
    for (int k = 0; k < PH_COUNT; k++) {
        values[k].s = texts[k] ? texts[k] : "";
        values[k].n = (uses >> k) & 1u ? strlen(values[k].s) : 0;
    }
}

/* See internal.h. */
int arb__template_has_system(const arb_template *tpl) { return tpl && tpl->system.present; }

/* See internal.h. */
int arb__template_put_json(const arb_template *tpl, const arb_prompt_vars *vars, int system,
                           arb__buf *b, long long *chars)
{
    long long counted = 0; /* added to *chars only when the section is written */
    if (!tpl || !vars || vars->options < 2 || vars->options > 4) return 1;
    const section *s = system ? &tpl->system : &tpl->user;
    if (system && !s->present) return 1;
    value values[PH_COUNT];
    fill_values(s->uses, vars, values); /* (a section's own: a literal system message needs none) */
    char *const *option_json = tpl->option_json[vars->options - 2];
    /* Room for the worst case at once (6 bytes out per byte of a value), so the escaper never
    ** grows the buffer part by part. */
    size_t room = tpl->json_total + 1;
    for (size_t i = 0; i < s->n_parts; i++)
        if (s->parts[i].placeholder >= 0) room += 6 * values[s->parts[i].placeholder].n;
    if (arb__buf_reserve(b, room)) return -1;
    size_t start = b->len;
    for (size_t i = 0; i < s->n_parts; i++) {
        const part *pt = &s->parts[i];
        if (pt->placeholder < 0) {
            memcpy(b->data + b->len, tpl->json_pool + pt->json_off, pt->json_len);
            b->len += pt->json_len;
            b->data[b->len] = '\0';
            if (counted >= 0) counted = pt->json_chars < 0 ? -1 : counted + pt->json_chars;
            continue;
        }
        int ph = pt->placeholder;
        if (ph >= PH_OPTION_LIST && ph <= PH_OPTION_RULES && option_json[ph - PH_OPTION_LIST]) {
            const char *text = option_json[ph - PH_OPTION_LIST];
            size_t n = strlen(text);
            memcpy(b->data + b->len, text, n + 1); /* (room: 6 bytes per byte of the text) */
            b->len += n;
            long long k = tpl->option_chars[vars->options - 2][ph - PH_OPTION_LIST];
            if (counted >= 0) counted = k < 0 ? -1 : counted + k;
            continue;
        }
        const value *v = &values[ph];
        int rc = arb__buf_json_chars_counted(b, v->s, v->n, &counted);
        if (rc) {
            b->len = start;
            b->data[start] = '\0';
            return rc;
        }
    }
    if (chars && *chars >= 0) *chars = counted < 0 ? -1 : *chars + counted;
    return 0;
}
