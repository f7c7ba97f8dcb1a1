// SPDX-License-Identifier: Apache-2.0
/*
 * histogram_quantile() semantics (Prometheus promql/quantile.go): linear
 * interpolation inside the bucket, 0 as the first bucket's lower bound,
 * the +Inf bucket rule, non-monotonic and repeated buckets, the edge cases;
 * then the per-route view built on it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "exporter/route_view.h"
#include "exporter/hist_quantile.h"
#include "policy/model/metric_store.h"
#include "selftests/unit/test.h"

#define B(...) ((struct hist_bucket[]){ __VA_ARGS__ })
#define N(...)                                                                 \
	(sizeof((struct hist_bucket[]){ __VA_ARGS__ }) /                       \
	 sizeof(struct hist_bucket))
#define Q(q, ...) hist_quantile__compute(q, B(__VA_ARGS__), N(__VA_ARGS__))

TEST(hist_quantile_interpolates)
{
	/* rank 2 falls in (1, 2] holding 2 of 4: halfway */
	ASSERT_NEAR(Q(0.5, { 1, 1 }, { 2, 3 }, { 4, 4 }, { INFINITY, 4 }), 1.5,
		    1e-12);
	ASSERT_NEAR(Q(1.0, { 1, 1 }, { 2, 3 }, { 4, 4 }, { INFINITY, 4 }), 4,
		    1e-12);
	ASSERT_NEAR(Q(0.25, { 1, 1 }, { 2, 3 }, { 4, 4 }, { INFINITY, 4 }), 1,
		    1e-12);
	/* the first bucket starts at 0 */
	ASSERT_NEAR(Q(0.5, { 10, 10 }, { INFINITY, 10 }), 5, 1e-12);
	ASSERT_NEAR(Q(0.99, { 10, 10 }, { INFINITY, 10 }), 9.9, 1e-12);
	/* Envoy's bounds, 100 observations spread 60/30/10 */
	ASSERT_NEAR(Q(0.95, { 5, 60 }, { 10, 90 }, { 25, 100 },
		      { INFINITY, 100 }),
		    10 + 15 * 0.5, 1e-12);
	/* unsorted input is sorted */
	ASSERT_NEAR(Q(0.5, { INFINITY, 4 }, { 4, 4 }, { 1, 1 }, { 2, 3 }), 1.5,
		    1e-12);
}

TEST(hist_quantile_inf_bucket_and_edges)
{
	/* the rank lands in +Inf: the highest finite bound */
	ASSERT_NEAR(Q(0.9, { 1, 1 }, { 2, 2 }, { INFINITY, 4 }), 2, 1e-12);
	/* a first bucket with a bound <= 0 gives that bound */
	ASSERT_NEAR(Q(0.25, { -1, 2 }, { 1, 4 }, { INFINITY, 4 }), -1, 1e-12);
	ASSERT_TRUE(isnan(Q(0.5, { 1, 1 }, { 2, 2 })), "no +Inf bucket");
	ASSERT_TRUE(isnan(Q(0.5, { INFINITY, 4 })), "one bucket");
	ASSERT_TRUE(isnan(Q(0.5, { 1, 0 }, { INFINITY, 0 })),
		    "no observations");
	ASSERT_TRUE(isnan(hist_quantile__compute(0.5, NULL, 0)), "no buckets");
	ASSERT_TRUE(isnan(Q(NAN, { 1, 1 }, { INFINITY, 1 })));
	ASSERT_TRUE(isinf(Q(-0.1, { 1, 1 }, { INFINITY, 1 })) &&
		    Q(-0.1, { 1, 1 }, { INFINITY, 1 }) < 0);
	ASSERT_TRUE(isinf(Q(1.1, { 1, 1 }, { INFINITY, 1 })) &&
		    Q(1.1, { 1, 1 }, { INFINITY, 1 }) > 0);
}

TEST(hist_quantile_monotonic_and_coalesced)
{
	/* a count that goes down is raised to the maximum so far: 5, 5, 6 */
	ASSERT_NEAR(Q(0.5, { 1, 5 }, { 2, 3 }, { INFINITY, 6 }), 0.6, 1e-12);
	/* two series with the same le add up: 1 + 1 in (0, 1] */
	ASSERT_NEAR(Q(0.5, { 1, 1 }, { 1, 1 }, { INFINITY, 2 }), 0.5, 1e-12);
}

/* The store's source series -> rows -> window figures, and the wire form. */
TEST(route_top_from_store)
{
	struct mstore_opts so = {};
	struct mstore *st = mstore__new(&so);
	static const double bounds[] = { 1, 5, 10 };
	struct mmetric_desc total = { .name = "envoy.http.downstream_rq_total",
				      .unit = "1",
				      .instrument = MI_COUNTER,
				      .is_int = true };
	struct mmetric_desc time = { .name = "envoy.http.downstream_rq_time",
				     .unit = "ms",
				     .instrument = MI_HISTOGRAM,
				     .hist = MH_EXPLICIT,
				     .bounds = bounds,
				     .nbounds = 3 };
	struct mlabel ok[] = { { "k8s.httproute.name", "api" },
			       { "k8s.namespace.name", "shop" },
			       { "envoy.cluster_name",
				 "httproute/shop/api/rule/1" },
			       { "http.response.status_code_class", "2xx" } };
	struct mlabel bad[] = { { "k8s.httproute.name", "api" },
				{ "k8s.namespace.name", "shop" },
				{ "envoy.cluster_name",
				  "httproute/shop/api/rule/1" },
				{ "http.response.status_code_class", "5xx" } };
	struct mlabel un[] = { { "k8s.httproute.name", "unmatched" } };
	struct rt_snap a = {}, b = {}, c = {};
	struct rt_stat s[4];
	char *json = NULL, err[256];
	size_t len = 0;
	FILE *f;
	int it, ih;

	if (!ASSERT_TRUE(st))
		return;
	it = mstore__add_metric(st, &total);
	ih = mstore__add_metric(st, &time);
	mstore__lock(st);
	mseries__add(mstore__series(st, it, ok, 4), 3, 1000000000);
	mseries__add(mstore__series(st, it, bad, 4), 1, 1000000000);
	mseries__add(mstore__series(st, it, un, 1), 2, 1000000000);
	for (int i = 0; i < 4; i++)
		mseries__observe(mstore__series(st, ih, i < 3 ? ok : bad, 4),
				 i < 2 ? 0.5 : 7, 1000000000);
	mstore__unlock(st);
	ASSERT_EQ(rt_snap__from_store(&a, st, 2000000000ULL), 0);
	ASSERT_EQ(a.n, 2);
	rt_view__compute(&a, NULL, NULL, s);
	rt_view__sort(s, a.n, RT_SORT_REQUESTS);
	ASSERT_STREQ(s[0].row->route, "api");
	ASSERT_EQ(s[0].row->rule, 1);
	ASSERT_NEAR(s[0].requests, 4, 0);
	ASSERT_NEAR(s[0].success, 0.75, 1e-12);
	/* 2 in (0,1], 2 in (5,10]: rank 2 -> 1; rank 3.8 -> 5 + 5 * 1.8/2 */
	ASSERT_NEAR(s[0].p50, 1, 1e-12);
	ASSERT_NEAR(s[0].p95, 9.5, 1e-12);
	ASSERT_TRUE(isnan(s[0].rps), "no previous snapshot");
	ASSERT_STREQ(s[1].row->route, "unmatched");
	ASSERT_EQ(s[1].row->rule, -1);
	ASSERT_TRUE(isnan(s[1].p50), "no histogram: no percentile");

	/* through the wire form, then a window: 2 more fast requests */
	f = open_memstream(&json, &len);
	rt_snap__write_json(f, &a);
	fclose(f);
	ASSERT_EQ(rt_snap__parse_json(&b, json, err, sizeof(err)), 0);
	ASSERT_EQ(b.n, 2);
	mstore__lock(st);
	mseries__add(mstore__series(st, it, ok, 4), 2, 3000000000);
	for (int i = 0; i < 2; i++)
		mseries__observe(mstore__series(st, ih, ok, 4), 0.2,
				 3000000000);
	mstore__unlock(st);
	ASSERT_EQ(rt_snap__from_store(&c, st, 4000000000ULL), 0);
	rt_view__compute(&c, &b, &b, s);
	/* routes without a namespace (the agent's markers) sort first */
	rt_view__sort(s, c.n, RT_SORT_ROUTE);
	ASSERT_STREQ(s[0].row->route, "unmatched");
	ASSERT_NEAR(s[0].rps, 0, 0);
	rt_view__sort(s, c.n, RT_SORT_RPS);
	ASSERT_STREQ(s[0].row->route, "api");
	ASSERT_NEAR(s[0].rps, 1, 1e-12);
	ASSERT_NEAR(s[0].window_requests, 2, 0);
	ASSERT_NEAR(s[0].success, 1, 0);
	ASSERT_NEAR(s[0].p50, 0.5, 1e-12);
	ASSERT_EQ(rt_snap__parse_json(&b, "[1,2]", err, sizeof(err)), -EINVAL);
	free(json);
	rt_snap__free(&a);
	rt_snap__free(&b);
	rt_snap__free(&c);
	mstore__free(st);
}

TEST(route_top_sort_keys)
{
	enum rt_sort k;

	ASSERT_EQ(rt_sort__parse("p99", &k), 0);
	ASSERT_EQ(k, RT_SORT_P99);
	ASSERT_EQ(rt_sort__parse("latency", &k), -EINVAL);
}
