/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The subcommands' entry points: each parses its flags (getopt) and calls
 * the library code that does the work. argv[0] is the subcommand's name;
 * each returns the process' exit status (0 done, 1 failed, 2 usage error).
 */
#ifndef MM_AGENT_CMD_H
#define MM_AGENT_CMD_H

#include <stdio.h>

#include "agent/cmd/check.h"

int run__main(int argc, char **argv);
int ctl__main(int argc, char **argv);
int top__main(int argc, char **argv);
int explain__main(int argc, char **argv);
/* The same, writing to out and errs (tests use memory streams). */
int explain__run(int argc, char **argv, FILE *out, FILE *errs);
int translate_api__main(int argc, char **argv);
int controller__main(int argc, char **argv);
int metrics_ref__main(int argc, char **argv);

#endif /* MM_AGENT_CMD_H */
