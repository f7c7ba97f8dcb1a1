// SPDX-License-Identifier: Apache-2.0
/* The data-plane source metrics: see source_metrics.h. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "policy/contract/source_metrics.h"

/* Envoy's default histogram buckets (source/common/stats/histogram_impl.h) */
const double source_metrics__envoy_bounds[] = {
	0.5, 1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000,
	30000, 60000, 300000, 600000, 1800000, 3600000,
};
const size_t source_metrics__envoy_nbounds =
	sizeof(source_metrics__envoy_bounds) /
	sizeof(source_metrics__envoy_bounds[0]);

const struct source_metric source_metrics__all[] = {
	{ "envoy.http.downstream_rq_total",
	  "Downstream (client to proxy) requests, by HTTPRoute rule.", "1",
	  MI_COUNTER, NULL, 0 },
	{ "envoy.http.downstream_rq_time",
	  "Downstream request time: first request byte received to last response byte sent.",
	  "ms", MI_HISTOGRAM, source_metrics__envoy_bounds,
	  sizeof(source_metrics__envoy_bounds) /
		  sizeof(source_metrics__envoy_bounds[0]) },
	{ "envoy.cluster.upstream_rq_total",
	  "Upstream (proxy to backend) requests, by HTTPRoute rule.", "1",
	  MI_COUNTER, NULL, 0 },
	{ "envoy.cluster.upstream_rq_time",
	  "Upstream request time: first upstream request byte sent to last response byte received.",
	  "ms", MI_HISTOGRAM, source_metrics__envoy_bounds,
	  sizeof(source_metrics__envoy_bounds) /
		  sizeof(source_metrics__envoy_bounds[0]) },
};
const size_t source_metrics__n =
	sizeof(source_metrics__all) / sizeof(source_metrics__all[0]);

const char *const source_metrics__attrs[] = {
	"k8s.httproute.name",
	"k8s.namespace.name",
	"k8s.gateway.name",
	"envoy.cluster_name",
	"http.request.method",
	"http.response.status_code",
	"http.response.status_code_class",
	"milometer.aborted",
	"rpc.grpc.status_code",
};
const size_t source_metrics__nattrs =
	sizeof(source_metrics__attrs) / sizeof(source_metrics__attrs[0]);

const struct source_metric *source_metrics__find(const char *name)
{
	for (size_t i = 0; name && i < source_metrics__n; i++)
		if (!strcmp(source_metrics__all[i].name, name))
			return &source_metrics__all[i];
	return NULL;
}

int source_metrics__rescale(const struct source_metric *s, double a, double b,
			    double *out, size_t max)
{
	if (!s || !s->nbounds || s->nbounds > max || !(a > 0) || !isfinite(b))
		return -EINVAL;
	for (size_t i = 0; i < s->nbounds; i++) {
		out[i] = a * s->bounds[i] + b;
		if (!isfinite(out[i]) || (i && !(out[i] > out[i - 1])))
			return -EINVAL;
	}
	return (int)s->nbounds;
}
