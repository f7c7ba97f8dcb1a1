/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Base-2 exponential histogram accumulator as the OTel data model and SDK
 * define it: at scale s, base = 2^(2^-s) and bucket i counts values in
 * (base^i, base^(i+1)]. Zero goes to the zero bucket (threshold 0), negative
 * values to a mirrored bucket range. Recording starts at the maximum scale
 * and halves the resolution (scale - 1 merges bucket pairs) whenever the
 * index range of a sign would exceed max_buckets.
 *
 * The struct lives inline in a series block; only the bucket arrays are
 * separate allocations, grown on demand up to max_buckets. Counts start one
 * byte wide and widen (2, 4, 8 bytes) when one would overflow, as the OTel
 * SDKs' adaptive counters do: 160 buckets of small counts take 160 bytes,
 * not 1280.
 */
#ifndef MM_EXPORTER_HIST_EXP_H
#define MM_EXPORTER_HIST_EXP_H

#include <stddef.h>
#include <stdint.h>

#define HIST_EXP_MAX_SCALE           20
#define HIST_EXP_MIN_SCALE           (-10)
#define HIST_EXP_DEFAULT_MAX_BUCKETS 160

struct hist_exp_buckets {
	int32_t offset; /* bucket index of counts[0] */
	uint32_t n;     /* counts in use */
	uint32_t cap;   /* counts allocated */
	uint8_t width;  /* bytes per count: 1, 2, 4 or 8; 0 before any */
	void *counts;   /* read with hist_exp__count_at() */
};

/* Count i of an array of width-byte counts. */
static inline uint64_t hist_exp__count_at(const void *counts, uint8_t width,
					  size_t i)
{
	switch (width) {
	case 1:
		return ((const uint8_t *)counts)[i];
	case 2:
		return ((const uint16_t *)counts)[i];
	case 4:
		return ((const uint32_t *)counts)[i];
	default:
		return ((const uint64_t *)counts)[i];
	}
}

struct hist_exp {
	uint64_t count;
	double sum;
	double min, max;
	uint64_t zero_count;
	int32_t scale;
	struct hist_exp_buckets pos, neg;
};

void hist_exp__init(struct hist_exp *h, int32_t max_scale);
/*
 * Record one value. Non-finite values are dropped, as the SDK does. Returns
 * the bytes newly allocated for buckets (>= 0) or -ENOMEM, in which case the
 * value was not recorded.
 */
long hist_exp__observe(struct hist_exp *h, double v, uint32_t max_buckets);
/* Back to empty at max_scale, keeping the bucket arrays for reuse. */
void hist_exp__reset(struct hist_exp *h, int32_t max_scale);
/* Frees the bucket arrays; returns the bytes freed. */
size_t hist_exp__free(struct hist_exp *h);
/* Merge buckets so the scale drops by change (> 0). */
void hist_exp__downscale(struct hist_exp *h, int32_t change);

/* Bucket index of a finite value > 0 at a scale. */
int32_t hist_exp__index(double v, int32_t scale);
/* base^index: the lower boundary of bucket index, upper of index - 1. */
double hist_exp__lower_boundary(int32_t index, int32_t scale);

#endif /* MM_EXPORTER_HIST_EXP_H */
