// SPDX-License-Identifier: Apache-2.0
/*
 * Resident cost per series, the figure `make bench` reports: 100k counter
 * series with realistic HTTP labels, explicit and exponential histograms.
 * Measured two ways: the store's own accounting (mstore__stats().bytes, glibc
 * chunk sizes) and the allocator's view (mallinfo2() delta; zero under ASan,
 * which replaces malloc, so only checked when meaningful).
 */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <time.h>

#include "exporter/metric_store.h"
#include "selftests/unit/test.h"

struct mem_figures {
	double store_per_series;
	double malloc_per_series; /* 0 when not measurable */
};

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/*
 * nseries label sets of the shape a gateway produces: route x method x
 * status x pod; observe() once per series with value v.
 */
static int fill(const struct mmetric_desc *d, size_t nseries, bool unique,
		bool keep_delta, bool spread, struct mem_figures *out)
{
	static const char *methods[] = { "GET", "POST", "PUT", "DELETE",
					 "PATCH" };
	struct mstore_opts o = { .max_series_per_metric = nseries + 1,
				 .keep_delta = keep_delta };
	struct mstore_stats st0, st1;
	struct mstore *st;
	size_t i, h0, h1;
	int id;

	h0 = heap_in_use();
	st = mstore__new(&o);
	if (!st)
		return -1;
	mstore__stats(st, &st0);
	id = mstore__add_metric(st, d);
	if (id < 0)
		return -1;
	mstore__lock(st);
	for (i = 0; i < nseries; i++) {
		char route[64], code[8], pod[64], ns[32];
		struct mlabel l[] = {
			{ "http.route", route },
			{ "http.request.method", methods[i % 5] },
			{ "http.response.status_code", code },
			{ "k8s.pod.name", pod },
			{ "k8s.namespace.name", ns },
			{ "gateway.networking.k8s.io/httproute", route },
		};
		struct mseries *ser;

		snprintf(route, sizeof(route), "/api/v1/service-%zu/items",
			 i / 5 % 50);
		snprintf(code, sizeof(code), "%zu", 200 + i / 250 % 20);
		if (unique)
			snprintf(pod, sizeof(pod), "gw-%zu", i);
		else
			snprintf(pod, sizeof(pod), "gateway-7d9f8c6b5-x%zu",
				 i / 5000 % 20);
		snprintf(ns, sizeof(ns), "team-%zu", i / 50 % 10);
		ser = mstore__series(st, id, l, 6);
		if (!ser)
			break;
		mseries__observe(ser, 0.001 * (double)(i % 1000) + 0.0005,
				 1);
		/* spread: 1 ms .. 1 s, a full 160-bucket latency histogram */
		for (int k = 0; spread && k < 64; k++)
			mseries__observe(ser, 0.001 * exp2(k * 10 / 63.0), 1);
	}
	mstore__unlock(st);
	mstore__stats(st, &st1);
	h1 = heap_in_use();
	out->store_per_series = (double)(st1.bytes - st0.bytes) / nseries;
	out->malloc_per_series = h1 > h0 ? (double)(h1 - h0) / nseries : 0;
	if (st1.series_active != nseries)
		out->store_per_series = 1e9;
	mstore__free(st);
	return 0;
}

static bool malloc_measurable(void)
{
	size_t a = heap_in_use(), b;
	void *p = malloc(1 << 16);

	b = heap_in_use();
	free(p);
	return b >= a + (1 << 16);
}

TEST(mstore_memory_per_series)
{
	struct mmetric_desc d = {
		.name = "http.server.request.count", .unit = "{request}",
		.instrument = MI_COUNTER,
	};
	struct mem_figures f;
	bool real = malloc_measurable();

	ASSERT_EQ(fill(&d, 100000, false, false, false, &f), 0);
	test_log("counter, 6 shared labels: %.0f B/series (store), %.0f "
		 "B/series (mallinfo2)\n", f.store_per_series,
		 f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 200, "%.0f", f.store_per_series);
	if (real)
		ASSERT_TRUE(f.malloc_per_series <= 200, "%.0f",
			    f.malloc_per_series);

	ASSERT_EQ(fill(&d, 100000, true, false, false, &f), 0);
	test_log("counter, one unique label value: %.0f B/series (store), "
		 "%.0f (mallinfo2)\n", f.store_per_series,
		 f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 300, "%.0f", f.store_per_series);

	d.temporality = MT_DELTA;
	ASSERT_EQ(fill(&d, 100000, false, true, false, &f), 0);
	test_log("counter, delta + cumulative (keep_delta): %.0f B/series\n",
		 f.store_per_series);
	ASSERT_TRUE(f.store_per_series <= 200, "%.0f", f.store_per_series);
	d.temporality = MT_CUMULATIVE;

	d.name = "http.server.request.duration";
	d.unit = "s";
	d.instrument = MI_HISTOGRAM;
	ASSERT_EQ(fill(&d, 20000, false, false, false, &f), 0);
	test_log("explicit histogram, 14 bounds: %.0f B/series (store), "
		 "%.0f (mallinfo2)\n", f.store_per_series,
		 f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 1024, "%.0f", f.store_per_series);
	if (real)
		ASSERT_TRUE(f.malloc_per_series <= 1024, "%.0f",
			    f.malloc_per_series);

	d.temporality = MT_DELTA;
	ASSERT_EQ(fill(&d, 20000, false, true, false, &f), 0);
	test_log("explicit histogram, delta + cumulative: %.0f B/series\n",
		 f.store_per_series);
	ASSERT_TRUE(f.store_per_series <= 1024, "%.0f", f.store_per_series);
	d.temporality = MT_CUMULATIVE;

	d.hist = MH_EXPONENTIAL;
	ASSERT_EQ(fill(&d, 20000, false, false, false, &f), 0);
	test_log("exponential histogram, 1 observation: %.0f B/series "
		 "(store), %.0f (mallinfo2); each extra populated bucket "
		 "span costs 8 B, at most 160 per sign\n",
		 f.store_per_series, f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 1024, "%.0f", f.store_per_series);
	ASSERT_EQ(fill(&d, 5000, false, false, true, &f), 0);
	test_log("exponential histogram, 1 ms..1 s spread (160 buckets): "
		 "%.0f B/series (store), %.0f (mallinfo2)\n",
		 f.store_per_series, f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 2048, "%.0f", f.store_per_series);
}

/* Producer cost: find an existing series by 4 labels and add to it. */
TEST(mstore_lookup_cost)
{
	static const char *methods[] = { "GET", "POST", "PUT", "DELETE" };
	struct mmetric_desc d = { .name = "reqs", .instrument = MI_COUNTER };
	struct mstore *st = mstore__new(NULL);
	int id = mstore__add_metric(st, &d), i;
	char routes[100][32], codes[5][8];
	struct timespec a, b;
	double ns;

	for (i = 0; i < 100; i++)
		snprintf(routes[i], sizeof(routes[i]), "/api/v1/svc-%d", i);
	for (i = 0; i < 5; i++)
		snprintf(codes[i], sizeof(codes[i]), "%d", 200 + 100 * i);
	clock_gettime(CLOCK_MONOTONIC, &a);
	mstore__lock(st);
	for (i = 0; i < 1000000; i++) {
		struct mlabel l[] = {
			{ "http.route", routes[i % 100] },
			{ "http.request.method", methods[i / 100 % 4] },
			{ "http.response.status_code", codes[i / 400 % 5] },
			{ "k8s.namespace.name", "default" },
		};

		mseries__add(mstore__series(st, id, l, 4), 1, 1);
	}
	mstore__unlock(st);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ns = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e6;
	test_log("series lookup + add, 4 labels, 2000 series: %.0f ns/op\n",
		 ns);
	ASSERT_TRUE(ns < 20000, "%.0f ns", ns);
	mstore__free(st);
}
