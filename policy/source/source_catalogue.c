// SPDX-License-Identifier: Apache-2.0
/* The data-plane source catalogue: see source_catalogue.h. */
#include <string.h>

#include "policy/source/source_catalogue.h"
#include "policy/source/spelling.h"

/* Every HTTP exchange carries these (agent/aggregate.c, build_labels()). */
static const char *const http_attrs[] = {
	SRC_ATTR_ROUTE, SRC_ATTR_NAMESPACE, SRC_ATTR_GATEWAY,
	SRC_ATTR_CLUSTER, SRC_ATTR_METHOD, SRC_ATTR_STATUS,
	SRC_ATTR_STATUS_CLASS, SRC_ATTR_ABORTED, SRC_ATTR_GRPC_STATUS, NULL,
};

const struct source_metric source_catalogue__metrics[] = {
	{ SRC_METRIC_DS_TOTAL, http_attrs },
	{ SRC_METRIC_DS_TIME, http_attrs },
	{ SRC_METRIC_US_TOTAL, http_attrs },
	{ SRC_METRIC_US_TIME, http_attrs },
	{ NULL, NULL },
};

#define NMETRICS (sizeof(source_catalogue__metrics) / \
		  sizeof(source_catalogue__metrics[0]) - 1)

const struct source_metric *source_catalogue__find(const char *name)
{
	for (size_t i = 0; i < NMETRICS; i++)
		if (!strcmp(source_catalogue__metrics[i].name, name))
			return &source_catalogue__metrics[i];
	return NULL;
}

bool source_catalogue__carries(const struct source_metric *m,
			       const char *key)
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
