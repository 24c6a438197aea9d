/*
** test_url.c -- judge endpoint URLs: which are refused before a run and why, and what is left
** of a URL once its credentials are stripped for storing.
*/
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void test_problem(void **state)
{
    static const char *const good[] = {
        "http://127.0.0.1:8000/v1", "https://api.example.com/v1", "http://h",
        "https://[::1]:8443/v1", "HTTP://h:1/v1", "http://h:65535/v1?api-version=2",
        "http://u:p@h/v1",
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (arb__url_problem(good[i])) fail_msg("%s: %s", good[i], arb__url_problem(good[i]));
    static const char *const bad[][2] = {
        {NULL, "is empty"},
        {"", "is empty"},
        {"127.0.0.1:8000/v1", "has no scheme; expected http://host[:port]/path or https://..."},
        {"localhost:8000", "has no scheme; expected http://host[:port]/path or https://..."},
        {"http:///v1", "has no host"},
        {"http://?x", "has no host"},
        {"http://h:0/v1", "has a bad port; expected a number from 1 to 65535"},
        {"http://h:65536/v1", "has a bad port; expected a number from 1 to 65535"},
        {"http://h:8o00/v1", "has a bad port; expected a number from 1 to 65535"},
        {"ftp://h/v1", "has an unsupported scheme; expected http:// or https://"},
        {"https:/%ahttps://api.example.com/v1", "has an unsupported scheme; expected http:// or https://"},
        {"x http://h/v1", "has an unsupported scheme; expected http:// or https://"},
        {"file:///etc/passwd", "has an unsupported scheme; expected http:// or https://"},
        {"http://h w/v1", "is not a valid URL (libcurl cannot parse it)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *got = arb__url_problem(bad[i][0]);
        if (!got || strcmp(got, bad[i][1]))
            fail_msg("%s: got %s, want %s", bad[i][0] ? bad[i][0] : "NULL", got ? got : "NULL",
                     bad[i][1]);
    }
}

static void test_redact(void **state)
{
    static const char *const cases[][2] = {
        /* nothing to remove: the text is kept byte for byte (no normalisation) */
        {"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
        {"HTTP://H:8000/v1/?api-version=2024-01", "HTTP://H:8000/v1/?api-version=2024-01"},
        /* userinfo */
        {"http://alice:pw@h:8000/v1", "http://h:8000/v1"},
        {"http://alice@h/v1", "http://h/v1"},
        {"http://:pw@h/v1", "http://h/v1"},
        /* key-like query parameters, case-insensitive, percent-encoded names too */
        {"http://h/v1?key=s", "http://h/v1"},
        {"http://h/v1?api_key=s&x=1", "http://h/v1?x=1"},
        {"http://h/v1?x=1&API-KEY=s&y=2", "http://h/v1?x=1&y=2"},
        {"http://h/v1?access_token=s&token=t&secret=u&password=v&auth=w&sig=z", "http://h/v1"},
        {"http://h/v1?api%5Fkey=s&x", "http://h/v1?x"},
        {"http://u:p@h/v1?key=s#frag", "http://h/v1#frag"},
        /* cannot be parsed: nothing of it is kept */
        {"http://u:p@h w/v1", "[REDACTED]"},
        {"not a url at all key=s", "[REDACTED]"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *got = arb__url_redact(cases[i][0]);
        if (!got || strcmp(got, cases[i][1]))
            fail_msg("%s: got %s, want %s", cases[i][0], got ? got : "NULL", cases[i][1]);
        free(got);
    }
    assert_null(arb__url_redact(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_problem),
        cmocka_unit_test(test_redact),
    };
    if (getenv("ARB_TEST")) cmocka_set_test_filter(getenv("ARB_TEST"));
    return cmocka_run_group_tests(tests, NULL, NULL);
}
