/* SPDX-License-Identifier: Apache-2.0 */
/*
 * milometer_* self-metrics: what BPF counted (events, drops per reason),
 * map fill ratios, series, policies by condition, export health, and the
 * agent's own CPU and memory — the per-node figures that let each node's
 * agent be sized on its own (vpa-daemonset-kep.md).
 */
#ifndef MM_AGENT_SELF_METRICS_H
#define MM_AGENT_SELF_METRICS_H

#include <stdio.h>

struct agent;
struct self_metrics;

struct self_metrics *self_metrics__new(struct agent *ag);
void self_metrics__free(struct self_metrics *sm);
/* Read every source and set the self-metric series (takes the store lock). */
void self_metrics__refresh(struct self_metrics *sm);
/*
 * The Markdown reference of the BPF counters and the self-metrics, from the
 * same table that registers them. Returns 0 or -errno.
 */
int self_metrics__write_reference(FILE *out);
/* Human or JSON dump for `milometer ctl stats`. */
void self_metrics__dump(struct self_metrics *sm, FILE *out, int json);

#endif /* MM_AGENT_SELF_METRICS_H */
