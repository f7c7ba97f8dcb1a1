// SPDX-License-Identifier: Apache-2.0
/* Explicit-bucket histograms: bucket edges, default bounds, via the store. */
#include <math.h>

#include "policy/model/hist_explicit.h"
#include "policy/model/metric_store.h"
#include "selftests/unit/test.h"

TEST(hist_explicit_bucket_edges)
{
	const double b[] = { 0, 5, 10 };

	/* (prev, bound]: a value equal to a bound belongs to that bucket */
	ASSERT_EQ(hist_explicit__bucket(b, 3, -1), 0);
	ASSERT_EQ(hist_explicit__bucket(b, 3, 0), 0);
	ASSERT_EQ(hist_explicit__bucket(b, 3, 0.0001), 1);
	ASSERT_EQ(hist_explicit__bucket(b, 3, 5), 1);
	ASSERT_EQ(hist_explicit__bucket(b, 3, 5.5), 2);
	ASSERT_EQ(hist_explicit__bucket(b, 3, 10), 2);
	ASSERT_EQ(hist_explicit__bucket(b, 3, 10.01), 3);
	ASSERT_EQ(hist_explicit__bucket(b, 3, INFINITY), 3);
	ASSERT_EQ(hist_explicit__bucket(b, 0, 3), 0);
}

TEST(hist_explicit_observe)
{
	const double b[] = { 1, 2 };
	/*
	 * A flexible array member cannot sit inside another struct in ISO C
	 * (clang rejects it under -Werror): size the storage as the store
	 * does, with hist_explicit__size(), in suitably aligned memory.
	 */
	union {
		struct hist_explicit h;
		unsigned char raw[sizeof(struct hist_explicit) +
				  3 * sizeof(uint64_t)];
	} x;
	struct hist_explicit *h = &x.h;

	ASSERT_EQ(hist_explicit__size(2), sizeof(x.raw));
	hist_explicit__reset(h, 2);
	hist_explicit__observe(h, b, 2, 1.5);
	hist_explicit__observe(h, b, 2, 0.5);
	hist_explicit__observe(h, b, 2, 7);
	hist_explicit__observe(h, b, 2, NAN);
	ASSERT_EQ(h->count, 3);
	ASSERT_NEAR(h->sum, 9, 0);
	ASSERT_NEAR(h->min, 0.5, 0);
	ASSERT_NEAR(h->max, 7, 0);
	ASSERT_EQ(h->counts[0], 1);
	ASSERT_EQ(h->counts[1], 1);
	ASSERT_EQ(h->counts[2], 1);
}

struct bounds_seen {
	size_t nbounds;
	double first, last;
	uint64_t counts[32];
};

static int grab_bounds(void *ctx, const struct mmetric_desc *desc,
		       const struct mpoint_view *p, size_t n)
{
	struct bounds_seen *b = ctx;
	size_t i;

	b->nbounds = desc->nbounds;
	b->first = desc->bounds[0];
	b->last = desc->bounds[desc->nbounds - 1];
	for (i = 0; i <= p[0].explicit_h->nbounds && i < 32; i++)
		b->counts[i] = p[0].explicit_h->counts[i];
	return 0;
}

TEST(hist_explicit_default_bounds_by_unit)
{
	struct mstore *st = mstore__new(NULL);
	struct mmetric_desc d = { .name = "dur",
				  .unit = "s",
				  .instrument = MI_HISTOGRAM };
	struct bounds_seen b = { 0 };
	struct mseries *ser;
	int id = mstore__add_metric(st, &d);

	mstore__lock(st);
	ser = mstore__series(st, id, NULL, 0);
	mseries__observe(ser, 0.005, 1);
	mseries__observe(ser, 0.0051, 1);
	mseries__observe(ser, 11, 1);
	mstore__unlock(st);
	ASSERT_EQ(mstore__collect(st, MT_CUMULATIVE, 2, grab_bounds, &b), 0);
	ASSERT_EQ(b.nbounds, 14);
	ASSERT_NEAR(b.first, 0.005, 0);
	ASSERT_NEAR(b.last, 10, 0);
	ASSERT_EQ(b.counts[0], 1);
	ASSERT_EQ(b.counts[1], 1);
	ASSERT_EQ(b.counts[14], 1);
	mstore__free(st);

	st = mstore__new(NULL);
	d.unit = "ms";
	id = mstore__add_metric(st, &d);
	mstore__lock(st);
	mseries__observe(mstore__series(st, id, NULL, 0), 3, 1);
	mstore__unlock(st);
	ASSERT_EQ(mstore__collect(st, MT_CUMULATIVE, 2, grab_bounds, &b), 0);
	ASSERT_EQ(b.nbounds, hist_explicit__sdk_nbounds);
	ASSERT_EQ(b.nbounds, 15);
	ASSERT_NEAR(b.first, 0, 0);
	ASSERT_NEAR(b.last, 10000, 0);
	ASSERT_EQ(b.counts[1], 1);
	mstore__free(st);
}
