// SPDX-License-Identifier: Apache-2.0
/* The data-plane source catalogue: see source_catalogue.h. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "policy/source/source_catalogue.h"
#include "policy/source/spelling.h"

/* Every HTTP exchange carries these (agent/pipeline/aggregate.c, build_labels()). */
static const char *const http_attrs[] = {
	SRC_ATTR_ROUTE,        SRC_ATTR_NAMESPACE,
	SRC_ATTR_GATEWAY,      SRC_ATTR_CLUSTER,
	SRC_ATTR_METHOD,       SRC_ATTR_STATUS,
	SRC_ATTR_STATUS_CLASS, SRC_ATTR_ABORTED,
	SRC_ATTR_GRPC_STATUS,  NULL,
};

/* Envoy's default histogram buckets (source/common/stats/histogram_impl.h) */
const double source_catalogue__envoy_bounds[] = {
	0.5,  1,    5,     10,    25,    50,     100,    250,     500,     1000,
	2500, 5000, 10000, 30000, 60000, 300000, 600000, 1800000, 3600000,
};
#define NENVOY                                                                 \
	(sizeof(source_catalogue__envoy_bounds) /                              \
	 sizeof(source_catalogue__envoy_bounds[0]))
const size_t source_catalogue__envoy_nbounds = NENVOY;

const struct source_metric source_catalogue__metrics[] = {
	{ SRC_METRIC_DS_TOTAL, http_attrs,
	  "Downstream (client to proxy) requests, by HTTPRoute rule.", "1",
	  MI_COUNTER, NULL, 0 },
	{ SRC_METRIC_DS_TIME, http_attrs,
	  "Downstream request time: first request byte received to last response byte sent.",
	  "ms", MI_HISTOGRAM, source_catalogue__envoy_bounds, NENVOY },
	{ SRC_METRIC_US_TOTAL, http_attrs,
	  "Upstream (proxy to backend) requests, by HTTPRoute rule.", "1",
	  MI_COUNTER, NULL, 0 },
	{ SRC_METRIC_US_TIME, http_attrs,
	  "Upstream request time: first upstream request byte sent to last response byte received.",
	  "ms", MI_HISTOGRAM, source_catalogue__envoy_bounds, NENVOY },
	{ NULL, NULL, NULL, NULL, MI_COUNTER, NULL, 0 },
};

int source_catalogue__rescale(const struct source_metric *s, double a, double b,
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

#define NMETRICS                                                               \
	(sizeof(source_catalogue__metrics) /                                   \
		 sizeof(source_catalogue__metrics[0]) -                        \
	 1)

const struct source_metric *source_catalogue__find(const char *name)
{
	for (size_t i = 0; i < NMETRICS; i++)
		if (name && !strcmp(source_catalogue__metrics[i].name, name))
			return &source_catalogue__metrics[i];
	return NULL;
}

bool source_catalogue__carries(const struct source_metric *m, const char *key)
{
	for (size_t i = 0; i < NMETRICS; i++) {
		const struct source_metric *x = &source_catalogue__metrics[i];

		if (m && m != x)
			continue;
		for (size_t j = 0; x->attrs[j]; j++)
			if (!strcmp(x->attrs[j], key))
				return true;
	}
	return false;
}

const char *source_catalogue__closest_metric(const char *name)
{
	const char *names[NMETRICS];

	for (size_t i = 0; i < NMETRICS; i++)
		names[i] = source_catalogue__metrics[i].name;
	return spelling__closest(name, names, NMETRICS);
}

const char *source_catalogue__closest_attr(const struct source_metric *m,
					   const char *key)
{
	/* every metric carries the same attributes today */
	const struct source_metric *x = m ? m : &source_catalogue__metrics[0];
	size_t n = 0;

	while (x->attrs[n])
		n++;
	return spelling__closest(key, x->attrs, n);
}
