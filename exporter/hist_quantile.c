// SPDX-License-Identifier: Apache-2.0
/* histogram_quantile() as Prometheus computes it: see hist_quantile.h. */
#include <math.h>
#include <stdlib.h>

#include "exporter/hist_quantile.h"

static int by_upper(const void *a, const void *b)
{
	double x = ((const struct hist_bucket *)a)->upper;
	double y = ((const struct hist_bucket *)b)->upper;

	return x < y ? -1 : x > y;
}

double hist_quantile__compute(double q, struct hist_bucket *b, size_t n)
{
	double total, rank, start = 0, count;
	size_t i, last, w = 0;

	if (isnan(q))
		return NAN;
	if (q < 0)
		return -INFINITY;
	if (q > 1)
		return INFINITY;
	if (!n)
		return NAN;
	qsort(b, n, sizeof(*b), by_upper);
	if (!isinf(b[n - 1].upper) || b[n - 1].upper < 0)
		return NAN;
	/* coalesceBuckets: equal bounds (series with le="1" and "1.0") add up */
	for (i = 0; i < n; i++) {
		if (w && b[w - 1].upper == b[i].upper)
			b[w - 1].count += b[i].count;
		else
			b[w++] = b[i];
	}
	n = w;
	for (i = 1; i < n; i++)
		if (b[i].count < b[i - 1].count)
			b[i].count = b[i - 1].count;
	if (n < 2)
		return NAN;
	total = b[n - 1].count;
	if (total == 0)
		return NAN;
	rank = q * total;
	last = n - 1;
	for (i = 0; i < last && b[i].count < rank; i++)
		;
	if (i == last)
		return b[n - 2].upper;
	if (i == 0 && b[0].upper <= 0)
		return b[0].upper;
	count = b[i].count;
	if (i > 0) {
		start = b[i - 1].upper;
		count -= b[i - 1].count;
		rank -= b[i - 1].count;
	}
	return start + (b[i].upper - start) * (rank / count);
}
