/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer explain`: which HTTPRoute rule a request belongs to, and the
 * Gateway API precedence step that decided it, from manifests on disk.
 */
#ifndef MM_POLICY_EXPLAIN_H
#define MM_POLICY_EXPLAIN_H

/*
 * argv[0] is the subcommand name. Prints "NAMESPACE/NAME rule N" or
 * "unmatched" on the first line of stdout, then the reasons. Returns 0 for
 * an answer (matched or not), 2 for bad input (message on stderr).
 */
int explain__main(int argc, char **argv);

#include <stdio.h>

/* The same, writing to out and errs (tests use memory streams). */
int explain__run(int argc, char **argv, FILE *out, FILE *errs);

#endif /* MM_POLICY_EXPLAIN_H */
