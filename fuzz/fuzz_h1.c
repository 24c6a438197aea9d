/*
** fuzz_h1.c -- libFuzzer target for the plain transport's HTTP/1.1 reply parser
** (http_plain.c). The first byte picks a piece size, the rest is a reply fed in pieces of that
** size, as recv() might hand it over. Checked: the parser never consumes more than it is
** given, stops consuming at the end of a reply, keeps the body within its cap, and reaches the
** same outcome (result, status, body, keep-alive) as when the whole input is fed at once.
*/
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct outcome {
    int rc;
    long status;
    int keep_alive;
    size_t consumed;
} outcome;

static outcome parse(const char *p, size_t n, size_t piece, arb__buf *body)
{
    arb__h1 h;
    memset(&h, 0, sizeof h);
    arb__buf_init(&h.head, 0);
    arb__h1_begin(&h, body);
    outcome o = {ARB__H1_MORE, 0, 0, 0};
    size_t off = 0;
    while (off < n && o.rc == ARB__H1_MORE) {
        size_t len = n - off < piece ? n - off : piece, used = 0;
        o.rc = arb__h1_feed(&h, p + off, len, &used);
        if (used > len) abort();
        if (o.rc == ARB__H1_MORE && used != len) abort();
        off += used;
    }
    if (o.rc == ARB__H1_MORE) o.rc = arb__h1_eof(&h);
    if (body->len > body->max) abort();
    o.status = h.status;
    o.keep_alive = h.keep_alive;
    o.consumed = off;
    arb__buf_free(&h.head);
    return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t piece = (size_t)data[0] % 17 + 1;
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    arb__buf whole_body, piece_body;
    arb__buf_init(&whole_body, 4096);
    arb__buf_init(&piece_body, 4096);
    outcome whole = parse(p, n, n ? n : 1, &whole_body);
    outcome pieces = parse(p, n, piece, &piece_body);
    if (whole.rc != pieces.rc) abort();
    if (whole.rc == ARB__H1_DONE) {
        if (whole.status != pieces.status || whole.keep_alive != pieces.keep_alive ||
            whole.consumed != pieces.consumed || whole_body.len != piece_body.len ||
            (whole_body.len && memcmp(whole_body.data, piece_body.data, whole_body.len)))
            abort();
        if (whole.status < 200 || whole.status > 999) abort();
    }
    arb__buf_free(&whole_body);
    arb__buf_free(&piece_body);
    return 0;
}
