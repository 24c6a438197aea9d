/*
** cmd_persona.c -- `arbiter persona`: persona bias (METHODS §9). This minimal dispatcher knows
** only `report` (cmd_persona_report.c); the persona protocol's dispatcher, which also runs
** studies, replaces it.
*/
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char persona_help[] =
    "usage: arbiter persona report --db FILE [--category NAME] [--bootstrap N --seed N] [--json]\n"
    "\n"
    "  report   what the stored persona scores show ('arbiter persona report --help')\n";

int cmd_persona(int argc, char **argv)
{
    if (argc < 2) {
        fputs(persona_help, stderr);
        return EXIT_USAGE;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        fputs(persona_help, stdout);
        return EXIT_OK;
    }
    /* the subcommand becomes argv[0] of its own option parsing */
    if (!strcmp(sub, "report")) return cmd_persona_report(argc - 1, argv + 1);
    return cli_usage_error("persona", "unknown subcommand \"%s\" (report)", sub);
}
