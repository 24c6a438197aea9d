/*
** fuzz_judges_file.c -- libFuzzer target for the YAML judges file reader (judges_file.c): the
** input is written to a scratch file and loaded. Whatever it holds, the loader either refuses it
** with a message naming the file, or returns judges that each have a model, a URL starting with
** http:// or https://, and distinct names.
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "arbiter.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0]) snprintf(path, sizeof path, "/tmp/arb_fuzz_judges_%ld.yaml", (long)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    arb_judges_file *jf = NULL;
    char *err = NULL;
    arb_status st = arb_judges_file_load(path, &jf, &err);
    if (st != ARB_OK) {
        if (jf) abort();
        if (st == ARB_PARSE && (!err || strncmp(err, path, strlen(path)) != 0)) abort();
    } else {
        size_t n = arb_judges_file_count(jf);
        for (size_t i = 0; i < n; i++) {
            const arb_judge_config *j = arb_judges_file_judge(jf, i);
            if (!j->model || !*j->model || !j->base_url) abort();
            /* schemes are case-insensitive (RFC 3986 3.1): HTTP://h/v1 is a valid endpoint */
            if (strncasecmp(j->base_url, "http://", 7) && strncasecmp(j->base_url, "https://", 8))
                abort();
            for (size_t k = 0; k < i; k++)
                if (!strcmp(j->name ? j->name : j->model,
                            arb_judges_file_judge(jf, k)->name ? arb_judges_file_judge(jf, k)->name
                                                               : arb_judges_file_judge(jf, k)->model))
                    abort();
        }
    }
    arb_free(err);
    arb_judges_file_destroy(jf);
    unlink(path); /* leave nothing behind in /tmp */
    return 0;
}
