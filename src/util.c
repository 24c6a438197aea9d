/*
** util.c -- small shared helpers: status strings, allocation that reports failure, a capped
** growing buffer, UTF-8 validation and counting, hashing, clocks, file reading, and the
** listening socket and request-body upload of the two HTTP servers (sim.c, annotate.c).
** Nothing here knows about judges, prompts or the store.
*/
#include "internal.h"


#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

volatile int arb__stop_requested = 0;

static const char *const status_messages[] = {
#define ARB__STATUS_MSG(name, msg) msg,
    ARB_STATUS_MAP(ARB__STATUS_MSG)
#undef ARB__STATUS_MSG
};

const char *arb_strerror(arb_status status)
{
    if ((int)status < 0 || status >= ARB__STATUS_COUNT) return "unknown status";
    return status_messages[status];
}

void arb_free(void *ptr) { free(ptr); }

int arb_defined(double metric) { return !isnan(metric); }

void arb_request_stop(void) { arb__stop_requested = 1; }

char *arb__strdup(const char *s)
{
    if (!s) return NULL;
    return arb__strndup(s, strlen(s));
}

char *arb__strndup(const char *s, size_t n)
{
    char *p = malloc(n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *arb__vsprintf(const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap2);
    va_end(ap2);
    if (n < 0) return NULL;
    char *p = malloc((size_t)n + 1);
    if (!p) return NULL;
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

char *arb__sprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = arb__vsprintf(fmt, ap);
    va_end(ap);
    return p;
}

void arb__buf_init(arb__buf *b, size_t max)
{
    b->data = NULL;
    b->len = 0;
    b->cap = 0;
    b->max = max ? max : ((size_t)1 << 30);
}

int arb__buf_reserve(arb__buf *b, size_t n)
{
    if (n > b->max || b->len > b->max - n) return -1;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *d = realloc(b->data, cap);
        if (!d) return -1;
        b->data = d;
        b->cap = cap;
    }
    return 0;
}

int arb__buf_append(arb__buf *b, const void *p, size_t n)
{
    if (arb__buf_reserve(b, n)) return -1;
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
    return 0;
}

int arb__buf_puts(arb__buf *b, const char *s) { return arb__buf_append(b, s, strlen(s)); }

/* See internal.h. */
size_t arb__decimal(char out[24], long long v)
{
    char text[24], *p = text + sizeof text;
    unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
    do *--p = (char)('0' + u % 10); while (u /= 10);
    if (v < 0) *--p = '-';
    size_t n = (size_t)(text + sizeof text - p);
    memcpy(out, p, n);
    out[n] = '\0';
    return n;
}

/* See internal.h. */
int arb__buf_put_int(arb__buf *b, long long v)
{
    char text[24];
    return arb__buf_append(b, text, arb__decimal(text, v));
}

int arb__buf_printf(arb__buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *p = arb__vsprintf(fmt, ap);
    va_end(ap);
    if (!p) return -1;
    int rc = arb__buf_puts(b, p);
    free(p);
    return rc;
}

void arb__buf_reset(arb__buf *b)
{
    b->len = 0;
    if (b->data) b->data[0] = '\0';
}

void arb__buf_free(arb__buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

char *arb__buf_steal(arb__buf *b)
{
    char *d = b->data;
    if (!d) d = arb__strdup("");
    /* Room reserved for a worst case (the JSON escaper reserves 6 bytes per byte in) is given
    ** back: a stolen text may live long (a slice's request bodies), and without this sbs held
    ** ~180 MB more at 100,000 items. */
    else if (b->cap - b->len > 256 + b->len / 4) {
        char *fit = realloc(d, b->len + 1);
        if (fit) d = fit;
    }
    b->data = NULL;
    b->len = b->cap = 0;
    return d;
}

/* The length of the UTF-8 sequence at p[0..avail) that starts with a byte >= 0x80: 2 to 4, or
** 0 when it is not valid (overlong, surrogate, above U+10FFFF, cut short). */
static size_t utf8_sequence(const unsigned char *p, size_t avail)
{
    unsigned c = p[0], min;
    size_t need;
    if (c >= 0xC2 && c <= 0xDF) { need = 1; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { need = 2; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 3; min = 0x10000; }
    else return 0;
    if (avail <= need) return 0;
    unsigned cp = c & (0x3Fu >> need);
    for (size_t k = 1; k <= need; k++) {
        if ((p[k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return need + 1;
}

/* arb__buf_json_string and arb__buf_json_text: s[0..n) as a JSON string; with check_utf8, 1
** (and b unchanged) when s is not valid UTF-8. Escapes as jansson's compact dump does (", \\,
** \b \f \n \r \t, other controls as \u00XX). Why not jansson: building and dumping a jansson
** tree cost ~35 us per 3 KB prompt, a third of the harness's whole per-call budget (judge.c's
** request bodies), and most of `arbiter export`'s time (~4.6 KB a line). Sixteen clean bytes
** are copied at a time with SSE2 where the compiler targets it, else eight (SWAR tests for "some byte less than 0x20", "some byte equal to c" and,
** when checking UTF-8, "some byte >= 0x80"), written straight into room reserved for the worst
** case (6 bytes out per byte in) a block at a time. Without quotes, only what goes between
** them. With chars (check_utf8 only), the code points of s are added to *chars, which
** becomes -1 when one of them is written as a \u escape (see arb__buf_json_chars_counted).
** 0, 1, or -1 (over max or no memory). */
static int json_escape(arb__buf *b, const char *s, size_t n, int check_utf8, int quotes,
                       long long *chars)
{
    static const char hex[] = "0123456789ABCDEF"; /* jansson writes upper case */
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    const unsigned char *in = (const unsigned char *)s;
    size_t start = b->len, i = 0, continuation = 0;
    int u_escape = 0;
    if (quotes && arb__buf_append(b, "\"", 1)) return -1;
    while (i < n) {
        size_t end = n - i < 65536 ? n : i + 65536;
        if (arb__buf_reserve(b, 6 * (end - i) + 1)) return -1;
        char *o = b->data + b->len;
        while (i < end) {
#if defined(__SSE2__)
            /* Sixteen bytes at a time where SSE2 is there (every x86-64): the block is stored
            ** whole (the room is reserved), then the clean bytes before the first one that
            ** needs care are kept and that one goes the byte-by-byte way below. */
            if (end - i >= 16) {
                unsigned high, mask = arb__json_special16(in + i, &high);
                if (check_utf8) mask |= high; /* bytes >= 0x80 */
                memcpy(o, in + i, 16);
                if (!mask) {
                    o += 16;
                    i += 16;
                    continue;
                }
                unsigned clean = (unsigned)__builtin_ctz(mask);
                o += clean;
                i += clean;
            } else
#endif
            if (end - i >= 8) {
                uint64_t w, q, k;
                memcpy(&w, in + i, 8);
                q = w ^ (ones * '"');
                k = w ^ (ones * '\\');
                uint64_t dirty = ((w - ones * 0x20) & ~w) | ((q - ones) & ~q) | ((k - ones) & ~k);
                if (check_utf8) dirty |= w;
                if (!(dirty & highs)) {
                    memcpy(o, in + i, 8);
                    o += 8;
                    i += 8;
                    continue;
                }
            }
            unsigned char c = in[i];
            if (c >= 0x80 && check_utf8) {
                /* a sequence may end past end: 6 bytes of room per byte in cover it */
                size_t len = utf8_sequence(in + i, n - i);
                if (!len) {
                    b->len = start;
                    b->data[start] = '\0';
                    return 1;
                }
                memcpy(o, in + i, len);
                o += len;
                i += len;
                continuation += len - 1;
                continue;
            }
            i++;
            if (c >= 0x20 && c != '"' && c != '\\') {
                *o++ = (char)c;
                continue;
            }
            *o++ = '\\';
            switch (c) {
            case '"': *o++ = '"'; break;
            case '\\': *o++ = '\\'; break;
            case '\b': *o++ = 'b'; break;
            case '\f': *o++ = 'f'; break;
            case '\n': *o++ = 'n'; break;
            case '\r': *o++ = 'r'; break;
            case '\t': *o++ = 't'; break;
            default:
                *o++ = 'u', *o++ = '0', *o++ = '0', *o++ = hex[c >> 4], *o++ = hex[c & 15];
                u_escape = 1;
            }
        }
        b->len = (size_t)(o - b->data);
        b->data[b->len] = '\0';
    }
    if (chars && *chars >= 0) *chars = u_escape ? -1 : *chars + (long long)(n - continuation);
    return quotes ? arb__buf_append(b, "\"", 1) : 0;
}

/* See internal.h. */
int arb__buf_json_string(arb__buf *b, const char *s, size_t n)
{
    return json_escape(b, s, n, 0, 1, NULL) ? -1 : 0;
}

/* See internal.h. */
int arb__buf_json_text(arb__buf *b, const char *s, size_t n) { return json_escape(b, s, n, 1, 1, NULL); }

/* See internal.h. */
int arb__buf_json_chars(arb__buf *b, const char *s, size_t n) { return json_escape(b, s, n, 1, 0, NULL); }

/* See internal.h. */
int arb__buf_json_chars_counted(arb__buf *b, const char *s, size_t n, long long *chars)
{
    return json_escape(b, s, n, 1, 0, chars);
}

int arb__utf8_valid(const char *s, size_t n, size_t *bad_offset)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, eight bytes at a time. */
        if (n - i >= 8) {
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ull)) {
                i += 8;
                continue;
            }
        }
        if (p[i] < 0x80) {
            i++;
            continue;
        }
        size_t len = utf8_sequence(p + i, n - i);
        if (!len) {
            if (bad_offset) *bad_offset = i;
            return 0;
        }
        i += len;
    }
    return 1;
}

/* Whether p[0..4) are hex digits, as JSON's \u escape needs (strtoul alone would also take a
** sign, spaces or "0x", which JSON refuses). */
static int is_hex4(const char *p)
{
    for (int i = 0; i < 4; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f') ||
              (p[i] >= 'A' && p[i] <= 'F')))
            return 0;
    return 1;
}

/* Whether the 8 bytes at p hold a '"', a '\\' or a control character (below 0x20): the bytes
** a JSON string's scan stops at. Exact (a borrow starts only at such a byte). */
static int json_special_in_8(const char *p)
{
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t w, quote, backslash;
    memcpy(&w, p, sizeof w);
    quote = w ^ (ones * '"');
    backslash = w ^ (ones * '\\');
    return (((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) |
            ((w - ones * 0x20) & ~w)) & highs ? 1 : 0;
}

/* See internal.h. */
const char *arb__json_decode_string(const char *p, const char *end, arb__buf *out)
{
    const char *run = ++p;
    while (p < end) {
        /* plain bytes 16 (SSE2) or 8 at a time: a dataset's texts are mostly such runs (3x
        ** faster than a byte at a time; 16 at a time, stopping at the first special byte,
        ** took the benchmark's 18,000 strings of 2,000 items from 12.0M to 5.8M instructions:
        ** callgrind, 2026-11-28) */
#if defined(__SSE2__)
        while (end - p >= 16) {
            unsigned high, mask = arb__json_special16(p, &high);
            if (mask) {
                p += __builtin_ctz(mask);
                break;
            }
            p += 16;
        }
#endif
        while (end - p >= 8 && !json_special_in_8(p)) p += 8;
        if (p == end) break;
        unsigned char c = (unsigned char)*p;
        if (c == '"') {
            if (arb__buf_append(out, run, (size_t)(p - run)) || arb__buf_append(out, "", 1))
                return NULL;
            return p + 1;
        }
        if (c < 0x20) return NULL;
        if (c != '\\') {
            p++;
            continue;
        }
        if (arb__buf_append(out, run, (size_t)(p - run)) || end - p < 2) return NULL;
        char e = p[1], one = 0;
        p += 2;
        switch (e) {
        case '"': case '\\': case '/': one = e; break;
        case 'b': one = '\b'; break;
        case 'f': one = '\f'; break;
        case 'n': one = '\n'; break;
        case 'r': one = '\r'; break;
        case 't': one = '\t'; break;
        case 'u': break;
        default: return NULL;
        }
        if (one) {
            if (arb__buf_append(out, &one, 1)) return NULL;
            run = p;
            continue;
        }
        unsigned long cp = 0, lo = 0;
        if (end - p < 4 || !is_hex4(p)) return NULL;
        cp = strtoul((char[5]){p[0], p[1], p[2], p[3], 0}, NULL, 16);
        p += 4;
        if (cp >= 0xD800 && cp < 0xDC00) { /* a high surrogate: its low one follows */
            if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || !is_hex4(p + 2)) return NULL;
            lo = strtoul((char[5]){p[2], p[3], p[4], p[5], 0}, NULL, 16);
            if (lo < 0xDC00 || lo >= 0xE000) return NULL;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            p += 6;
        } else if ((cp >= 0xDC00 && cp < 0xE000) || cp == 0) {
            return NULL;
        }
        unsigned char u[4];
        size_t n;
        if (cp < 0x80) {
            u[0] = (unsigned char)cp;
            n = 1;
        } else if (cp < 0x800) {
            u[0] = (unsigned char)(0xC0 | (cp >> 6));
            u[1] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 2;
        } else if (cp < 0x10000) {
            u[0] = (unsigned char)(0xE0 | (cp >> 12));
            u[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[2] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 3;
        } else {
            u[0] = (unsigned char)(0xF0 | (cp >> 18));
            u[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
            u[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
            u[3] = (unsigned char)(0x80 | (cp & 0x3F));
            n = 4;
        }
        if (arb__buf_append(out, u, n)) return NULL;
        run = p;
    }
    return NULL;
}

size_t arb__utf8_codepoints(const char *s, size_t n)
{
    size_t count = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80) count++;
    return count;
}

void arb__hash_hex(const void *p, size_t n, char out[33])
{
    XXH128_hash_t h = XXH3_128bits(p, n);
    arb__hash128_hex(h.high64, h.low64, out);
}

void arb__hash128_hex(uint64_t high64, uint64_t low64, char out[33])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        unsigned byte = (unsigned)((i < 8 ? high64 >> (56 - 8 * i) : low64 >> (56 - 8 * (i - 8))) & 0xFF);
        out[2 * i] = hex[byte >> 4];
        out[2 * i + 1] = hex[byte & 15];
    }
    out[32] = '\0';
}

double arb__now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

char *arb__read_file(const char *path, size_t *len, char **errmsg)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errmsg) *errmsg = arb__sprintf("%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    arb__buf b;
    arb__buf_init(&b, 0);
    char chunk[65536];
    size_t n;
    int failed = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        if (arb__buf_append(&b, chunk, n)) { failed = 1; break; }
    if (ferror(f)) failed = 2;
    fclose(f);
    if (failed) {
        if (errmsg)
            *errmsg = arb__sprintf("%s: %s", path, failed == 1 ? "file too large or out of memory"
                                                                : "read error");
        arb__buf_free(&b);
        return NULL;
    }
    if (len) *len = b.len;
    return arb__buf_steal(&b);
}

const char *arb__json_kind(const json_t *v)
{
    if (!v) return "nothing";
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER:
    case JSON_REAL: return "number";
    case JSON_TRUE:
    case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "unknown";
}

/* Appends name for a terminal: control characters (C0, DEL, and the C1 controls U+0080..U+009F,
** which some terminals also obey), the explicit bidirectional controls (U+202A..U+202E,
** U+2066..U+2069, which a terminal with bidi support obeys to the end of the line) and bytes
** that are not valid UTF-8 become '?', so an untrusted name cannot inject escape sequences or
** reverse the columns after it. Returns 0, or -1 when out of memory. */
int arb__buf_put_safe(arb__buf *b, const char *name)
{
    size_t len = strlen(name);
    size_t pos = 0;
    while (pos < len) {
        size_t bad = len - pos;
        if (arb__utf8_valid(name + pos, len - pos, &bad)) bad = len - pos;
        for (size_t i = pos; i < pos + bad; i++) {
            unsigned char c = (unsigned char)name[i];
            if (c < 0x20 || c == 0x7f) {
                if (arb__buf_append(b, "?", 1)) return -1;
            } else if (c == 0xc2 && i + 1 < pos + bad && (unsigned char)name[i + 1] >= 0x80 &&
                       (unsigned char)name[i + 1] <= 0x9f) {
                if (arb__buf_append(b, "?", 1)) return -1;
                i++;
            } else if (c == 0xe2 && i + 2 < pos + bad &&
                       (((unsigned char)name[i + 1] == 0x80 && (unsigned char)name[i + 2] >= 0xaa &&
                         (unsigned char)name[i + 2] <= 0xae) ||
                        ((unsigned char)name[i + 1] == 0x81 && (unsigned char)name[i + 2] >= 0xa6 &&
                         (unsigned char)name[i + 2] <= 0xa9))) {
                if (arb__buf_append(b, "?", 1)) return -1;
                i += 2;
            } else if (arb__buf_append(b, &name[i], 1)) {
                return -1;
            }
        }
        pos += bad;
        if (pos < len) { /* the invalid byte itself */
            if (arb__buf_append(b, "?", 1)) return -1;
            pos++;
        }
    }
    return 0;
}

/* A name as a JSON string; bytes that are not valid UTF-8 (jansson refuses them) become
** U+FFFD. Returns NULL when out of memory. */
json_t *arb__json_name(const char *name)
{
    size_t len = strlen(name);
    size_t bad = 0;
    if (arb__utf8_valid(name, len, &bad)) return json_stringn(name, len);
    arb__buf b;
    arb__buf_init(&b, 0);
    size_t pos = 0;
    while (pos < len) {
        size_t run = len - pos;
        if (arb__utf8_valid(name + pos, len - pos, &run)) run = len - pos;
        if (arb__buf_append(&b, name + pos, run)) goto fail;
        pos += run;
        if (pos < len) {
            if (arb__buf_puts(&b, "\xef\xbf\xbd")) goto fail;
            pos++;
        }
    }
    json_t *s = json_stringn(b.data ? b.data : "", b.len);
    arb__buf_free(&b);
    return s;
fail:
    arb__buf_free(&b);
    return NULL;
}

/* A metric as a JSON real, or null when undefined: JSON has no NaN or infinity. Returns a new
** reference, or NULL when out of memory. */
json_t *arb__json_metric(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* Untrusted names as a JSON array of strings (see arb__json_name). NULL when out of memory. */
json_t *arb__json_names(const char *const *names, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++)
        if (json_array_append_new(a, arb__json_name(names[i]))) {
            json_decref(a);
            return NULL;
        }
    return a;
}

/* [lo, hi] as a JSON array, or null when either end is undefined. NULL when out of memory. */
json_t *arb__json_interval(double lo, double hi)
{
    if (!isfinite(lo) || !isfinite(hi)) return json_null();
    json_t *a = json_array();
    if (!a || json_array_append_new(a, json_real(lo)) || json_array_append_new(a, json_real(hi))) {
        json_decref(a);
        return NULL;
    }
    return a;
}

/* Sets obj[key] to value, taking value over even on failure. Returns 0, or -1 when value is
** NULL (an earlier allocation failed) or setting fails. */
int arb__json_set(json_t *obj, const char *key, json_t *value)
{
    if (!value) return -1;
    return json_object_set_new(obj, key, value) ? -1 : 0;
}

/* See internal.h. */
json_t *arb__json_price(const arb_price *price)
{
    if (!price || !price->known) return json_null();
    json_t *o = json_object();
    if (!o || arb__json_set(o, "input_per_mtok", json_real(price->input_per_mtok)) ||
        arb__json_set(o, "output_per_mtok", json_real(price->output_per_mtok)) ||
        (!isnan(price->cached_input_per_mtok) &&
         arb__json_set(o, "cached_input_per_mtok", json_real(price->cached_input_per_mtok))) ||
        (price->batch_discount > 0 &&
         arb__json_set(o, "batch_discount", json_real(price->batch_discount)))) {
        json_decref(o);
        return NULL;
    }
    return o;
}

/* ---- interned strings --------------------------------------------------------------------- */

static uint64_t strtab_hash(const char *s) { return XXH3_64bits(s, strlen(s)); }

/* Returns the index of s in t, or UINT32_MAX when absent. */
uint32_t arb__strtab_find(const arb__strtab *t, const char *s)
{
    if (!t->n_slots) return UINT32_MAX;
    size_t mask = t->n_slots - 1;
    for (size_t k = (size_t)strtab_hash(s) & mask;; k = (k + 1) & mask) {
        uint32_t v = t->slots[k];
        if (!v) return UINT32_MAX;
        if (!strcmp(t->names[v - 1], s)) return v - 1;
    }
}

/* Rebuilds the slots at twice the size (the load stays at most one half). 0, -1 no memory. */
static int strtab_rehash(arb__strtab *t)
{
    size_t n_slots = t->n_slots ? t->n_slots * 2 : 64;
    uint32_t *slots = calloc(n_slots, sizeof *slots);
    if (!slots) return -1;
    for (size_t idx = 0; idx < t->n; idx++) {
        size_t k = (size_t)strtab_hash(t->names[idx]) & (n_slots - 1);
        while (slots[k]) k = (k + 1) & (n_slots - 1);
        slots[k] = (uint32_t)idx + 1;
    }
    free(t->slots);
    t->slots = slots;
    t->n_slots = n_slots;
    return 0;
}

/* Returns the index of s, adding a copy when new; UINT32_MAX when out of memory. */
uint32_t arb__strtab_intern(arb__strtab *t, const char *s)
{
    uint32_t found = arb__strtab_find(t, s);
    if (found != UINT32_MAX) return found;
    if (t->n >= UINT32_MAX - 1) return UINT32_MAX;
    if ((t->n + 1) * 2 > t->n_slots && strtab_rehash(t)) return UINT32_MAX;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16;
        char **names = realloc(t->names, cap * sizeof *names);
        if (!names) return UINT32_MAX;
        t->names = names;
        t->cap = cap;
    }
    char *copy = arb__strdup(s);
    if (!copy) return UINT32_MAX;
    size_t k = (size_t)strtab_hash(s) & (t->n_slots - 1);
    while (t->slots[k]) k = (k + 1) & (t->n_slots - 1);
    t->names[t->n] = copy;
    t->slots[k] = (uint32_t)t->n + 1;
    return (uint32_t)t->n++;
}

/* Frees the strings and the table (not t itself); t is left empty and reusable. */
void arb__strtab_free(arb__strtab *t)
{
    for (size_t i = 0; i < t->n; i++) free(t->names[i]);
    free(t->names);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

/* See internal.h. */
void arb__excerpt(char *out, size_t size, const char *s, size_t n)
{
    size_t cut = n;
    int more = 0;
    if (cut > 40) {
        cut = 40;
        while (cut > 0 && ((unsigned char)s[cut] & 0xC0) == 0x80) cut--;
        more = 1;
    }
    arb__buf b;
    arb__buf_init(&b, 0);
    char *prefix = arb__strndup(s, cut);
    /* an embedded NUL ends the prefix early; the '?' below stands for it */
    if (!prefix || arb__buf_put_safe(&b, prefix)) {
        snprintf(out, size, "(value)");
    } else {
        if (strlen(prefix) < cut) arb__buf_puts(&b, "?");
        snprintf(out, size, "\"%s\"%s", b.data ? b.data : "", more ? "..." : "");
    }
    free(prefix);
    arb__buf_free(&b);
}

/* See internal.h. The pointer goes through memcpy, so one helper serves arrays of every type
** without type punning. */
int arb__grow(void *pp, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap) return 0;
    size_t n = *cap ? *cap : 16;
    while (n < need) {
        if (n > SIZE_MAX / 2 / size) return -1;
        n *= 2;
    }
    void *p;
    memcpy(&p, pp, sizeof p);
    void *q = realloc(p, n * size);
    if (!q) return -1;
    memcpy(pp, &q, sizeof q);
    *cap = n;
    return 0;
}

/* See internal.h. */
int arb__upload_step(void **req_cls, size_t max, const char *data, size_t *size, arb__upload **up)
{
    arb__upload *u = *req_cls;
    if (!u) { /* the first call brings the headers only */
        if (!(u = calloc(1, sizeof *u))) return -1;
        arb__buf_init(&u->body, max);
        *req_cls = u;
        return 1;
    }
    *up = u;
    if (*size) {
        if (!u->too_big && arb__buf_append(&u->body, data, *size)) u->too_big = 1;
        *size = 0;
        return 1;
    }
    return 0;
}

/* See internal.h. */
void arb__upload_free(void **req_cls)
{
    arb__upload *u = *req_cls;
    if (!u) return;
    arb__buf_free(&u->body);
    free(u);
    *req_cls = NULL;
}

/* ---- listening sockets (the simulator and the annotation app) ------------------------------ */

/* See internal.h. */
void arb__set_err(char **errmsg, const char *fmt, ...)
{
    if (!errmsg) return;
    va_list ap;
    va_start(ap, fmt);
    *errmsg = arb__vsprintf(fmt, ap);
    va_end(ap);
}

/* See internal.h. */
int arb__listen(const char *address, int port, const char *who, int *family, int *bound_port,
                char **errmsg)
{
    char port_text[16];
    snprintf(port_text, sizeof port_text, "%d", port);
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(address, port_text, &hints, &res);
    if (gai) {
        arb__set_err(errmsg, "%scannot listen on %s port %d: %s", who, address, port, gai_strerror(gai));
        return -1;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, SOMAXCONN)) {
        arb__set_err(errmsg, "%scannot listen on %s port %d: %s", who, address, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(res);
        return -1;
    }
    *family = res->ai_family;
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t ss_len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len)) {
        arb__set_err(errmsg, "%scannot read the port of %s: %s", who, address, strerror(errno));
        close(fd);
        return -1;
    }
    *bound_port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                           : ntohs(((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

/* See internal.h. */
int arb__text_next_line(const char *text, size_t len, size_t *pos, const char **line, size_t *n)
{
    if (*pos == 0 && len >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) *pos = 3; /* byte order mark */
    if (*pos >= len) return 0;
    *line = text + *pos;
    const char *nl = memchr(*line, '\n', len - *pos);
    *n = nl ? (size_t)(nl - *line) : len - *pos;
    *pos += *n + (nl ? 1 : 0);
    if (*n && (*line)[*n - 1] == '\r') (*n)--;
    return 1;
}
