/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Explicit-bucket histogram accumulator, OTel semantics: with bounds
 * b[0] < ... < b[n-1], bucket i counts values in (b[i-1], b[i]] and bucket n
 * counts (b[n-1], +Inf). The counts live in the caller's memory (a series
 * block) so a series costs one allocation.
 */
#ifndef MM_EXPORTER_HIST_EXPLICIT_H
#define MM_EXPORTER_HIST_EXPLICIT_H

#include <stddef.h>
#include <stdint.h>

struct hist_explicit {
	uint64_t count;
	double sum;
	double min, max;
	uint64_t counts[]; /* nbounds + 1 */
};

static inline size_t hist_explicit__size(size_t nbounds)
{
	return sizeof(struct hist_explicit) + (nbounds + 1) * sizeof(uint64_t);
}

void hist_explicit__reset(struct hist_explicit *h, size_t nbounds);
/* NaN is dropped (returns without counting); +-Inf land in the edge buckets. */
void hist_explicit__observe(struct hist_explicit *h, const double *bounds,
			    size_t nbounds, double v);
/* Index of the bucket v falls in: first i with v <= bounds[i], else nbounds. */
size_t hist_explicit__bucket(const double *bounds, size_t nbounds, double v);

/* OTel's default explicit bounds (ms-oriented, as the SDK ships them). */
extern const double hist_explicit__sdk_bounds[];
extern const size_t hist_explicit__sdk_nbounds;
/* OTel HTTP semantic-convention advice for durations in seconds. */
extern const double hist_explicit__seconds_bounds[];
extern const size_t hist_explicit__seconds_nbounds;

/*
 * The bounds a histogram uses when its definition gives none: the seconds
 * advice for units "s"/"seconds", the SDK default otherwise.
 */
void hist_explicit__default_bounds(const char *unit, const double **bounds,
				   size_t *nbounds);

#endif /* MM_EXPORTER_HIST_EXPLICIT_H */
