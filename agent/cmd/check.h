/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer check --manifests DIR [--manifests FILE...] [--json]`: validate
 * MetricDefinitions, MetricPolicies and ClusterProperties offline, print
 * each object with file:line and its conditions, and dry-run the policy
 * engine so Programmed shows what would be produced from the manifests'
 * subject objects. Exit 0 when everything is accepted, 1 when any object is
 * rejected or a manifest cannot be parsed, 2 on usage errors (including an
 * unreadable path).
 */
#ifndef MM_POLICY_CHECK_CMD_H
#define MM_POLICY_CHECK_CMD_H

#include <stdio.h>

int check__main(int argc, char **argv);
/* Same, writing to out/err instead of stdout/stderr (tests). */
int check__run(int argc, char **argv, FILE *out, FILE *err);

#endif /* MM_POLICY_CHECK_CMD_H */
