/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The data-plane source metrics milometer produces and the attributes each
 * sample carries: what a DataPlane MetricPolicy can select
 * (selector.otel.metricName, attributeSelectors[].key, attributeFilters[].key,
 * attributes['...'] in CEL). agent/pipeline/aggregate.c emits exactly these names;
 * `milometer check` holds policies against them.
 */
#ifndef MM_POLICY_SOURCE_CATALOGUE_H
#define MM_POLICY_SOURCE_CATALOGUE_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/model/metric_store.h"

#define SRC_METRIC_DS_TOTAL "envoy.http.downstream_rq_total"
#define SRC_METRIC_DS_TIME  "envoy.http.downstream_rq_time"
#define SRC_METRIC_US_TOTAL "envoy.cluster.upstream_rq_total"
#define SRC_METRIC_US_TIME  "envoy.cluster.upstream_rq_time"

#define SRC_ATTR_ROUTE        "k8s.httproute.name"
#define SRC_ATTR_NAMESPACE    "k8s.namespace.name"
#define SRC_ATTR_GATEWAY      "k8s.gateway.name"
#define SRC_ATTR_CLUSTER      "envoy.cluster_name"
#define SRC_ATTR_METHOD       "http.request.method"
#define SRC_ATTR_STATUS       "http.response.status_code"
#define SRC_ATTR_STATUS_CLASS "http.response.status_code_class"
#define SRC_ATTR_ABORTED      "milometer.aborted"
#define SRC_ATTR_GRPC_STATUS  "rpc.grpc.status_code"

struct source_metric {
	const char *name;
	const char *const *attrs; /* NULL-terminated */
	const char *description;
	const char *unit;
	enum minstrument instrument;
	const double *bounds; /* histograms: explicit bounds, ascending */
	size_t nbounds;
};

/* Envoy's default histogram bounds (ms), those of the *_time sources. */
extern const double source_catalogue__envoy_bounds[];
extern const size_t source_catalogue__envoy_nbounds;

/*
 * The bounds a histogram target gets from a histogram source through an
 * affine transform a*v+b with a > 0: every source bound mapped by the same
 * transform, so a sample lands in the bucket of the source bound it came
 * from and a translation that only renames `le` is exact. Writes at most
 * max bounds; returns how many, or -EINVAL when the transform cannot keep
 * the bounds strictly ascending and finite (a <= 0, overflow).
 */
int source_catalogue__rescale(const struct source_metric *s, double a, double b,
			      double *out, size_t max);

/* Every source metric, NULL-name terminated. */
extern const struct source_metric source_catalogue__metrics[];

/* The metric named so, or NULL. */
const struct source_metric *source_catalogue__find(const char *name);
/* Does metric m (NULL: any source metric) carry attribute key? */
bool source_catalogue__carries(const struct source_metric *m, const char *key);
/*
 * The known name closest to a misspelt one: a metric name, or an
 * attribute key of m (NULL: of any metric). NULL when none is close.
 */
const char *source_catalogue__closest_metric(const char *name);
const char *source_catalogue__closest_attr(const struct source_metric *m,
					   const char *key);

#endif /* MM_POLICY_SOURCE_CATALOGUE_H */
