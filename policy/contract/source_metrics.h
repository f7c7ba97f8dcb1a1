/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data-plane source metrics the agent produces, named as Envoy names its
 * stats: the one list the aggregator registers, the policy engine rescales
 * histogram bounds from, and `milometer translate` compiles policies
 * against. Order is the aggregator's (SRC_* in agent/aggregate.c).
 *
 * Attributes of every source series (OTel keys, as the aggregator sets them):
 * k8s.httproute.name ("unmatched"/"unknown" without a route),
 * k8s.namespace.name, k8s.gateway.name, envoy.cluster_name
 * ("httproute/NS/NAME/rule/N"), http.request.method,
 * http.response.status_code, http.response.status_code_class,
 * milometer.aborted, rpc.grpc.status_code.
 */
#ifndef MM_POLICY_CONTRACT_SOURCE_METRICS_H
#define MM_POLICY_CONTRACT_SOURCE_METRICS_H

#include <stddef.h>

#include "exporter/metric_store.h"

struct source_metric {
	const char *name;
	const char *description;
	const char *unit;
	enum minstrument instrument;
	const double *bounds; /* histograms: explicit bounds, ascending */
	size_t nbounds;
};

/* Envoy's default histogram bounds (ms). */
extern const double source_metrics__envoy_bounds[];
extern const size_t source_metrics__envoy_nbounds;

extern const struct source_metric source_metrics__all[];
extern const size_t source_metrics__n;
extern const char *const source_metrics__attrs[];
extern const size_t source_metrics__nattrs;

/* The source metric of that name, or NULL. */
const struct source_metric *source_metrics__find(const char *name);

/*
 * The bounds a histogram target gets from a histogram source through an
 * affine transform a*v+b with a > 0: every source bound mapped by the same
 * transform, so a sample lands in the bucket of the source bound it came
 * from and a translation that only renames `le` is exact. Writes at most
 * max bounds; returns how many, or -EINVAL when the transform cannot keep
 * the bounds strictly ascending and finite (a <= 0, overflow).
 */
int source_metrics__rescale(const struct source_metric *s, double a, double b,
			    double *out, size_t max);

#endif /* MM_POLICY_CONTRACT_SOURCE_METRICS_H */
