// SPDX-License-Identifier: Apache-2.0
/*
 * Exponential histograms: index mapping at exact powers of two and around
 * boundaries, downscaling, and quantiles estimated from the buckets of
 * realistic latency shapes against the exact quantiles of the same samples.
 */
#include <math.h>
#include <stdlib.h>

#include "policy/model/hist_exp.h"
#include "selftests/unit/test.h"

TEST(hist_exp_index_powers_of_two)
{
	int32_t scale;
	int e;

	/* 2^e is the inclusive upper bound of bucket (e << scale) - 1 */
	for (scale = -4; scale <= 20; scale++) {
		for (e = -1070; e <= 1020; e += 7) {
			double v = ldexp(1, e);
			/* ceil(e * 2^scale) - 1 */
			int64_t want = scale >= 0
					       ? (int64_t)e * (1 << scale) - 1
					       : (int64_t)ceil((double)e /
							       (1 << -scale)) -
							 1;

			ASSERT_EQ(hist_exp__index(v, scale), want);
			/* just above 2^e moves to the next bucket at s >= 0 */
			if (scale >= 0 && e > -1000)
				ASSERT_EQ(
					hist_exp__index(nextafter(v, INFINITY),
							scale),
					want + 1);
		}
	}
	ASSERT_EQ(hist_exp__index(1, 0), -1);
	ASSERT_EQ(hist_exp__index(1.5, 0), 0);
	ASSERT_EQ(hist_exp__index(2, 0), 0);
	ASSERT_EQ(hist_exp__index(3, 0), 1);
	ASSERT_EQ(hist_exp__index(4, -1), 0); /* (1, 4] at base 4 */
	ASSERT_EQ(hist_exp__index(4.5, -1), 1);
	ASSERT_EQ(hist_exp__index(0.5, -1), -1);
	/* subnormals and the largest double stay in range */
	ASSERT_EQ(hist_exp__index(ldexp(1, -1074), 0), -1075);
	ASSERT_EQ(hist_exp__index(1.7976931348623157e308, 0), 1023);
}

TEST(hist_exp_index_matches_boundaries)
{
	int32_t scale;
	unsigned int seed = 7;

	/* every value lies in (lb(i), lb(i + 1)] of the bucket it maps to */
	for (scale = -3; scale <= 20; scale++) {
		int k;

		for (k = 0; k < 20000; k++) {
			double v = exp(
				(rand_r(&seed) / (double)RAND_MAX - 0.5) * 80);
			int32_t i = hist_exp__index(v, scale);

			ASSERT_TRUE(v > hist_exp__lower_boundary(i, scale) &&
					    v <= hist_exp__lower_boundary(
							 i + 1, scale),
				    "v=%.17g scale=%d i=%d", v, scale, i);
		}
	}
	/* boundaries themselves at scale 3: base^8 == 2 exactly */
	ASSERT_NEAR(hist_exp__lower_boundary(8, 3), 2.0, 0);
	ASSERT_NEAR(hist_exp__lower_boundary(-8, 3), 0.5, 0);
	ASSERT_NEAR(hist_exp__lower_boundary(3, -2), 4096.0, 0);
}

TEST(hist_exp_downscale)
{
	struct hist_exp h;
	uint64_t total = 0;
	uint32_t i;
	int v;

	hist_exp__init(&h, 20);
	ASSERT_TRUE(hist_exp__observe(&h, 1.5, 160) >= 0);
	ASSERT_EQ(h.scale, 20);
	ASSERT_EQ(h.pos.n, 1);
	/* 1.5 and 3 differ by about 2^20 buckets at scale 20 */
	ASSERT_TRUE(hist_exp__observe(&h, 3, 160) >= 0);
	/* both fit in 160 buckets once 2^scale < 160: scale 7 */
	ASSERT_EQ(h.scale, 7);
	ASSERT_EQ(h.pos.offset, hist_exp__index(1.5, 7));
	ASSERT_EQ(h.pos.offset + (int32_t)h.pos.n - 1, hist_exp__index(3, 7));
	hist_exp__free(&h);

	/* 1..1000 needs 161 buckets at scale 4, so scale 3 (as the SDK) */
	hist_exp__init(&h, 20);
	for (v = 1; v <= 1000; v++)
		ASSERT_TRUE(hist_exp__observe(&h, v, 160) >= 0);
	ASSERT_EQ(h.scale, 3);
	ASSERT_TRUE(h.pos.n <= 160);
	for (i = 0; i < h.pos.n; i++)
		total += hist_exp__count_at(h.pos.counts, h.pos.width, i);
	ASSERT_EQ(total, 1000);
	/* each bucket holds exactly the integers in (lb(i), lb(i+1)] */
	for (i = 0; i < h.pos.n; i++) {
		int32_t idx = h.pos.offset + (int32_t)i;
		double lo = hist_exp__lower_boundary(idx, h.scale);
		double hi = hist_exp__lower_boundary(idx + 1, h.scale);
		uint64_t want = 0;

		for (v = 1; v <= 1000; v++)
			want += v > lo && v <= hi;
		ASSERT_EQ(hist_exp__count_at(h.pos.counts, h.pos.width, i),
			  want);
	}
	ASSERT_NEAR(h.min, 1, 0);
	ASSERT_NEAR(h.max, 1000, 0);
	ASSERT_NEAR(h.sum, 500500, 0);
	hist_exp__free(&h);

	/* explicit downscale merges pairs: indices i -> floor(i / 2) */
	hist_exp__init(&h, 0);
	hist_exp__observe(&h, 0.3, 160);  /* index -2 */
	hist_exp__observe(&h, 0.75, 160); /* index -1 */
	hist_exp__observe(&h, 1.5, 160);  /* index 0 */
	hist_exp__observe(&h, 3, 160);    /* index 1 */
	hist_exp__downscale(&h, 1);
	ASSERT_EQ(h.scale, -1);
	ASSERT_EQ(h.pos.offset, -1);
	ASSERT_EQ(h.pos.n, 2);
	ASSERT_EQ(hist_exp__count_at(h.pos.counts, h.pos.width, 0), 2);
	ASSERT_EQ(hist_exp__count_at(h.pos.counts, h.pos.width, 1), 2);
	hist_exp__free(&h);
}

TEST(hist_exp_zero_negative_nonfinite)
{
	struct hist_exp h;

	hist_exp__init(&h, 20);
	hist_exp__observe(&h, 0, 160);
	hist_exp__observe(&h, -2, 160);
	hist_exp__observe(&h, -2, 160);
	hist_exp__observe(&h, 2, 160);
	hist_exp__observe(&h, NAN, 160);
	hist_exp__observe(&h, INFINITY, 160);
	ASSERT_EQ(h.count, 4);
	ASSERT_EQ(h.zero_count, 1);
	ASSERT_EQ(h.neg.n, 1);
	ASSERT_EQ(hist_exp__count_at(h.neg.counts, h.neg.width, 0), 2);
	ASSERT_EQ(h.neg.offset, hist_exp__index(2, 20));
	ASSERT_EQ(h.pos.offset, h.neg.offset);
	ASSERT_NEAR(h.min, -2, 0);
	ASSERT_NEAR(h.max, 2, 0);
	ASSERT_NEAR(h.sum, -2, 0);
	hist_exp__reset(&h, 20);
	ASSERT_EQ(h.count, 0);
	ASSERT_EQ(h.pos.n, 0);
	ASSERT_EQ(h.scale, 20);
	hist_exp__free(&h);
}

/* xorshift64*: the same samples on every run and every libc */
static uint64_t rng_state;

static double uniform01(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return ((rng_state * 0x2545F4914F6CDD1Dull) >> 11) * 0x1.0p-53 +
	       0x1.0p-54;
}

static double gauss(void)
{
	return sqrt(-2 * log(uniform01())) * cos(2 * M_PI * uniform01());
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Upper bound of the bucket holding the rank-k sample (1-based). */
static double bucket_quantile(const struct hist_exp *h, uint64_t k)
{
	uint64_t cum = 0;
	uint32_t i;

	for (i = 0; i < h->pos.n; i++) {
		cum += hist_exp__count_at(h->pos.counts, h->pos.width, i);
		if (cum >= k)
			return hist_exp__lower_boundary(
				h->pos.offset + (int32_t)i + 1, h->scale);
	}
	return NAN;
}

static void check_quantiles(const char *shape, double *x, size_t n)
{
	static const double qs[] = { 0.01, 0.1, 0.5, 0.9, 0.99, 0.999 };
	struct hist_exp h;
	double bound, worst = 0;
	size_t i;

	hist_exp__init(&h, 20);
	for (i = 0; i < n; i++)
		ASSERT_TRUE(hist_exp__observe(&h, x[i], 160) >= 0);
	qsort(x, n, sizeof(*x), cmp_double);
	bound = exp2(exp2(-h.scale)) - 1;
	for (i = 0; i < sizeof(qs) / sizeof(qs[0]); i++) {
		uint64_t k = (uint64_t)ceil(qs[i] * n);
		double exact = x[k - 1], est = bucket_quantile(&h, k);
		double rel = fabs(est - exact) / exact;

		if (rel > worst)
			worst = rel;
		ASSERT_TRUE(rel <= bound,
			    "%s q=%g exact=%g est=%g rel=%g "
			    "bound=%g",
			    shape, qs[i], exact, est, rel, bound);
	}
	test_log("%s: scale %d, %u buckets, worst rel error %.4f <= %.4f\n",
		 shape, h.scale, h.pos.n, worst, bound);
	hist_exp__free(&h);
}

TEST(hist_exp_quantiles_lognormal_and_bimodal)
{
	size_t n = 100000, i;
	double *x = malloc(n * sizeof(*x));

	ASSERT_TRUE(x);
	rng_state = 0x9e3779b97f4a7c15ull;
	/* request latency: median 20 ms, long tail */
	for (i = 0; i < n; i++)
		x[i] = 0.020 * exp(0.8 * gauss());
	check_quantiles("lognormal", x, n);
	if (test__failed())
		goto out;
	/* cache hits around 1 ms, misses around 150 ms */
	for (i = 0; i < n; i++)
		x[i] = uniform01() < 0.7 ? 0.001 * exp(0.3 * gauss())
					 : 0.150 * exp(0.5 * gauss());
	check_quantiles("bimodal", x, n);
out:
	free(x);
}

/*
 * Adaptive counter width: counts start one byte wide and widen, exactly,
 * when a bucket passes 255, 65535 and 2^32 - 1, also when a downscale
 * merges two buckets past the width; 160 buckets of small counts stay
 * under 1 KiB (the OTel SDKs' adaptive counters).
 */
TEST(hist_exp_adaptive_width)
{
	struct hist_exp h;
	long bytes = 0, r;
	uint64_t total = 0;

	hist_exp__init(&h, HIST_EXP_MAX_SCALE);
	for (int i = 0; i < 70000; i++) {
		r = hist_exp__observe(&h, 3.0, 160);
		ASSERT_TRUE((r) >= 0);
		bytes += r;
		if (i == 254)
			ASSERT_EQ(h.pos.width, 1); /* 255 fits a byte */
		if (i == 255)
			ASSERT_EQ(h.pos.width, 2); /* 256 does not */
	}
	ASSERT_EQ(h.pos.n, 1);
	ASSERT_EQ(h.pos.width, 4); /* 70000 > 65535 */
	ASSERT_EQ(hist_exp__count_at(h.pos.counts, h.pos.width, 0), 70000);
	ASSERT_EQ(bytes, (long)(h.pos.cap * h.pos.width));
	hist_exp__free(&h);

	/* two buckets of 200 merged by a downscale: 400 needs 2 bytes */
	hist_exp__init(&h, 0);
	for (int i = 0; i < 200; i++) {
		ASSERT_TRUE((hist_exp__observe(&h, 3.0, 160)) >=
			    0); /* (2, 4] */
		ASSERT_TRUE((hist_exp__observe(&h, 1.5, 160)) >=
			    0); /* (1, 2] */
	}
	ASSERT_EQ(h.pos.width, 1);
	hist_exp__downscale(&h, 1);
	for (uint32_t i = 0; i < h.pos.n; i++)
		total += hist_exp__count_at(h.pos.counts, h.pos.width, i);
	ASSERT_EQ(total, 400);
	ASSERT_TRUE((h.pos.width) >= 2);
	hist_exp__free(&h);

	/* every one of 160 buckets used, counts < 256: 160 bytes of counts */
	hist_exp__init(&h, 4);
	bytes = 0;
	for (int i = 0; i < 160; i++)
		for (int k = 0; k < 3; k++) {
			r = hist_exp__observe(&h, pow(2, (i + 0.5) / 16.0),
					      160);
			ASSERT_TRUE((r) >= 0);
			bytes += r;
		}
	ASSERT_EQ(h.pos.n, 160);
	ASSERT_EQ(h.scale, 4);
	ASSERT_EQ(h.pos.width, 1);
	ASSERT_TRUE((bytes + (long)sizeof(h)) <= 1024);
	hist_exp__free(&h);
}
