/*
** cmd_persona_report.c -- `arbiter persona report`: the analysis of a persona-bias study
** (METHODS §9). Not built in this branch yet: it says so and fails.
*/
#include "cli.h"

#include <stdio.h>

int cmd_persona_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fputs("arbiter persona report: not built yet\n", stderr);
    return EXIT_FAIL;
}
