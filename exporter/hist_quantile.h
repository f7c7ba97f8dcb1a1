/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Quantiles of a classic (explicit-bucket) histogram, computed as
 * Prometheus' histogram_quantile() computes them (promql/quantile.go,
 * BucketQuantile), so a figure milometer shows equals the one a PromQL
 * query over the same buckets returns:
 *  - buckets are sorted by upper bound; the last must be +Inf, else NaN;
 *  - counts that go down are raised to the running maximum (a scrape
 *    racing an update), as ensureMonotonicAndIgnoreSmallDeltas does;
 *  - fewer than two buckets, or no observations: NaN;
 *  - rank = q * total; the first bucket whose cumulative count reaches the
 *    rank holds the quantile, linearly interpolated inside it from the
 *    previous upper bound (0 for the first bucket when its bound is
 *    positive; the bound itself when it is <= 0);
 *  - a rank in the +Inf bucket gives the highest finite upper bound;
 *  - q < 0 gives -Inf, q > 1 +Inf, q NaN NaN.
 */
#ifndef MM_EXPORTER_HIST_QUANTILE_H
#define MM_EXPORTER_HIST_QUANTILE_H

#include <stddef.h>

struct hist_bucket {
	double upper; /* le */
	double count; /* cumulative: observations <= upper */
};

/* The q-quantile of n buckets (sorted in place by upper bound). */
double hist_quantile__compute(double q, struct hist_bucket *b, size_t n);

#endif /* MM_EXPORTER_HIST_QUANTILE_H */
