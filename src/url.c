/*
** url.c -- judge endpoint URLs through libcurl's URL API (curl_url): checking a URL before
** anything is sent, and stripping credentials from a URL before it is stored.
**
** Invariants: a URL that passes arb__url_problem() parses with libcurl, has the scheme http or
** https, a host, and a port from 1 to 65535 when one is written; the transfer that later uses
** it therefore cannot fail on the URL itself. A redacted URL keeps scheme, host, port, path,
** fragment and the query parameters that do not look like credentials; user name, password,
** login options and key-like parameters (their name contains key, token, secret, pass, auth,
** sig or credential, case-insensitively) are dropped, so what reaches the store, its exports
** and reports can be shown to anyone.
** It never prints a URL: messages name what is wrong, not the value (which may hold a secret).
*/
#include "internal.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

/* Why url cannot be a judge endpoint (a static phrase to follow "the URL "), or NULL when it
** can. */
const char *arb__url_problem(const char *url)
{
    if (!url || !*url) return "is empty";
    /* libcurl without CURLU_DEFAULT_SCHEME refuses a URL without one; say so in plain words. */
    const char *authority = strstr(url, "://");
    if (!authority) return "has no scheme; expected http://host[:port]/path or https://...";
    /* The URL must start with the scheme and "://": libcurl also takes "https:/x..." (one slash)
    ** and would find a later "://" for us, so "https:/%ahttps://h/v1" passed and was sent to a
    ** host nobody meant. */
    size_t scheme_len = (size_t)(authority - url);
    if (!(scheme_len == 4 && !strncasecmp(url, "http", 4)) &&
        !(scheme_len == 5 && !strncasecmp(url, "https", 5)))
        return "has an unsupported scheme; expected http:// or https://";
    /* libcurl 7.x reads "http:///v1" as a URL with a host; nothing can be sent to it. */
    if (strchr("/?#", authority[3])) return "has no host";
    CURLU *u = curl_url();
    if (!u) return "cannot be checked (out of memory)";
    const char *problem = NULL;
    char *scheme = NULL, *host = NULL, *port = NULL;
    CURLUcode rc = curl_url_set(u, CURLUPART_URL, url, 0);
    if (rc == CURLUE_BAD_PORT_NUMBER) {
        problem = "has a bad port; expected a number from 1 to 65535";
    } else if (rc == CURLUE_UNSUPPORTED_SCHEME) {
        problem = "has an unsupported scheme; expected http:// or https://";
    } else if (rc != CURLUE_OK) {
        problem = "is not a valid URL (libcurl cannot parse it)";
    } else if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
               (strcasecmp(scheme, "http") && strcasecmp(scheme, "https"))) {
        problem = "has an unsupported scheme; expected http:// or https://";
    } else if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host) {
        problem = "has no host";
    } else if (curl_url_get(u, CURLUPART_PORT, &port, 0) == CURLUE_OK && atol(port) < 1) {
        problem = "has a bad port; expected a number from 1 to 65535";
    }
    curl_free(scheme);
    curl_free(host);
    curl_free(port);
    curl_url_cleanup(u);
    return problem;
}

/* 1 when a query parameter named name (n bytes, still percent-encoded) may carry a secret. */
static int secret_parameter(const char *name, size_t n)
{
    static const char *const words[] = {"key", "token", "secret", "pass", "auth", "sig",
                                        "credential"};
    int len = 0;
    char *decoded = curl_easy_unescape(NULL, name, (int)n, &len);
    if (!decoded) return 1; /* cannot tell: treat as secret */
    for (int i = 0; i < len; i++) decoded[i] = (char)tolower((unsigned char)decoded[i]);
    int secret = 0;
    for (size_t w = 0; w < sizeof words / sizeof words[0] && !secret; w++)
        secret = strstr(decoded, words[w]) != NULL;
    curl_free(decoded);
    return secret;
}

/* The query without its secret-looking parameters (caller frees), or NULL when out of memory;
** *changed says whether one was dropped. */
static char *query_without_secrets(const char *query, int *changed)
{
    arb__buf b;
    arb__buf_init(&b, 0);
    int failed = arb__buf_reserve(&b, strlen(query) + 1);
    for (const char *p = query; *p && !failed;) {
        size_t n = strcspn(p, "&");
        size_t name_len = strcspn(p, "=&");
        if (n > 0 && secret_parameter(p, name_len)) {
            *changed = 1;
        } else if (n > 0) {
            failed = (b.len && arb__buf_append(&b, "&", 1)) || arb__buf_append(&b, p, n);
        }
        p += n;
        if (*p == '&') p++;
    }
    if (failed) {
        arb__buf_free(&b);
        return NULL;
    }
    if (b.len == 0) {
        arb__buf_free(&b);
        return arb__strdup("");
    }
    return arb__buf_steal(&b);
}

/* url without user name, password, login options and secret-looking query parameters, for
** storing (caller frees). The text is returned unchanged when there was nothing to remove;
** a URL libcurl cannot parse becomes "[REDACTED]" (which part is secret cannot be told).
** NULL when url is NULL or out of memory. */
char *arb__url_redact(const char *url)
{
    if (!url) return NULL;
    CURLU *u = curl_url();
    if (!u) return NULL;
    char *out = NULL, *part = NULL, *query = NULL;
    int changed = 0, failed = 0;
    if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) != CURLUE_OK) {
        out = arb__strdup("[REDACTED]");
        goto done;
    }
    static const CURLUPart userinfo[] = {CURLUPART_USER, CURLUPART_PASSWORD, CURLUPART_OPTIONS};
    for (size_t i = 0; i < sizeof userinfo / sizeof userinfo[0]; i++) {
        if (curl_url_get(u, userinfo[i], &part, 0) == CURLUE_OK) {
            changed = 1;
            failed |= curl_url_set(u, userinfo[i], NULL, 0) != CURLUE_OK;
        }
        curl_free(part);
        part = NULL;
    }
    if (curl_url_get(u, CURLUPART_QUERY, &part, 0) == CURLUE_OK) {
        int dropped = 0;
        query = query_without_secrets(part, &dropped);
        if (!query) goto done;
        if (dropped) {
            changed = 1;
            failed |= curl_url_set(u, CURLUPART_QUERY, *query ? query : NULL, 0) != CURLUE_OK;
        }
    }
    if (failed) { /* a part could not be removed: store nothing of the URL */
        out = arb__strdup("[REDACTED]");
        goto done;
    }
    if (!changed) {
        out = arb__strdup(url);
        goto done;
    }
    char *text = NULL;
    if (curl_url_get(u, CURLUPART_URL, &text, 0) == CURLUE_OK) out = arb__strdup(text);
    curl_free(text);
done:
    curl_free(part);
    free(query);
    curl_url_cleanup(u);
    return out;
}
