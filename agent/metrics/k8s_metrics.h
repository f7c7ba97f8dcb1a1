/* SPDX-License-Identifier: Apache-2.0 */
/*
 * milometer_k8s_* self-metrics from the reflectors' counters: per watched
 * resource its state (1 on the current state's series), relists, errors
 * by code, seconds since it was last known in sync, objects held; and the
 * requests and bytes this agent cost the API server.
 */
#ifndef MM_AGENT_METRICS_K8S_METRICS_H
#define MM_AGENT_METRICS_K8S_METRICS_H

#include <stdint.h>
#include <stdio.h>

struct mstore;
struct k8s_api;
struct k8s_metrics;

struct k8s_metrics *k8s_metrics__new(struct mstore *store);
void k8s_metrics__free(struct k8s_metrics *m);
/* The Markdown reference of these metrics (metric_doc). Returns 0 or -errno. */
int k8s_metrics__write_reference(FILE *out);
/* Set every series; the caller holds the store lock. */
void k8s_metrics__refresh(struct k8s_metrics *m, struct k8s_api *api,
			  uint64_t now_ns);

#endif /* MM_AGENT_METRICS_K8S_METRICS_H */
