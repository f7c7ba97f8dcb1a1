// SPDX-License-Identifier: Apache-2.0
/* Explicit-bucket histogram accumulator: see hist_explicit.h. */
#include <math.h>
#include <string.h>

#include "policy/model/hist_explicit.h"

/* opentelemetry-specification sdk.md, "Explicit Bucket Histogram Aggregation" */
const double hist_explicit__sdk_bounds[] = {
	0, 5, 10, 25, 50, 75, 100, 250, 500, 750, 1000, 2500, 5000, 7500, 10000,
};
const size_t hist_explicit__sdk_nbounds = sizeof(hist_explicit__sdk_bounds) /
					  sizeof(hist_explicit__sdk_bounds[0]);

/* semantic-conventions http-metrics.md, http.server.request.duration advice */
const double hist_explicit__seconds_bounds[] = {
	0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25,
	0.5,   0.75, 1,     2.5,  5,     7.5, 10,
};
const size_t hist_explicit__seconds_nbounds =
	sizeof(hist_explicit__seconds_bounds) /
	sizeof(hist_explicit__seconds_bounds[0]);

void hist_explicit__default_bounds(const char *unit, const double **bounds,
				   size_t *nbounds)
{
	if (unit && (!strcmp(unit, "s") || !strcmp(unit, "seconds"))) {
		*bounds = hist_explicit__seconds_bounds;
		*nbounds = hist_explicit__seconds_nbounds;
	} else {
		*bounds = hist_explicit__sdk_bounds;
		*nbounds = hist_explicit__sdk_nbounds;
	}
}

void hist_explicit__reset(struct hist_explicit *h, size_t nbounds)
{
	memset(h, 0, hist_explicit__size(nbounds));
}

size_t hist_explicit__bucket(const double *bounds, size_t nbounds, double v)
{
	size_t lo = 0, hi = nbounds;

	/* first bound >= v; bounds are sorted and free of NaN */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v <= bounds[mid])
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

void hist_explicit__observe(struct hist_explicit *h, const double *bounds,
			    size_t nbounds, double v)
{
	if (isnan(v))
		return;
	h->counts[hist_explicit__bucket(bounds, nbounds, v)]++;
	if (!h->count || v < h->min)
		h->min = v;
	if (!h->count || v > h->max)
		h->max = v;
	h->count++;
	h->sum += v;
}
