/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer metrics-reference`: the Markdown reference of every metric the
 * binary registers, rendered from the producers' own tables (metric_doc),
 * so docs/metrics.md is regenerated, never edited.
 */
#ifndef MM_AGENT_METRICS_REF_H
#define MM_AGENT_METRICS_REF_H

#include <stdio.h>

/* The whole reference. Returns 0 or -errno. */
int metrics_ref__write(FILE *out);

#endif /* MM_AGENT_METRICS_REF_H */
