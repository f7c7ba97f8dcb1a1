/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer top`: the per-route view (exporter/route_view.h) live in a terminal,
 * from the local agent's debug socket or cluster-wide from a Prometheus
 * query API over the envoy.* source series the agents export.
 */
#ifndef MM_AGENT_TOP_H
#define MM_AGENT_TOP_H

#include <stdbool.h>

#include "exporter/route_view.h"

struct top_opts {
	const char *socket;         /* the agent's debug socket */
	const char *prometheus_url; /* non-NULL: query Prometheus instead */
	enum rt_sort sort;
	bool once;
	bool json;
	double interval_s; /* between refreshes */
	double window_s; /* success/percentiles: < 0 since the series started */
	const char *rate_range; /* Prometheus: the rate() range, e.g. "1m" */
};

/* Fill snap with the cumulative figures of the chosen source; -errno, err says why. */
int top__fetch(const struct top_opts *o, struct rt_snap *snap, char *err,
	       size_t errlen);
/* Run the view (one frame with --once); the process exit status. */
int top__run(const struct top_opts *o);
/* `milometer top ...` */

#endif /* MM_AGENT_TOP_H */
