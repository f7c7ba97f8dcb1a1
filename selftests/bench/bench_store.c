// SPDX-License-Identifier: Apache-2.0
/*
 * Metric store and exposition figures for `make bench` (moved out of the
 * unit suite: they time things or measure the heap, which a unit test must
 * not depend on):
 *  - resident cost per series: 100k counter series with realistic HTTP
 *    labels, explicit and exponential histograms, measured two ways: the
 *    store's own accounting (mstore__stats().bytes, glibc chunk sizes) and
 *    the allocator's view (mallinfo2() delta; zero under ASan, which
 *    replaces malloc, so only checked when meaningful);
 *  - series lookup + add on the producer path;
 *  - a text-format scrape of 100k series.
 * Prints one line per figure (report.py reads the "B/series" lines) and a
 * "MISS" line for a figure past its bound; exits 1 when any missed.
 */
#include <malloc.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/model/metric_store.h"
#include "exporter/prom_text.h"

static int misses;

/* A figure past its bound (or a broken setup): say which, count it. */
#define ASSERT_TRUE(cond, ...)                                                 \
	({                                                                     \
		bool ___ok = !!(cond);                                         \
		if (!___ok) {                                                  \
			printf("MISS %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			misses++;                                              \
		}                                                              \
		___ok;                                                         \
	})
#define ASSERT_EQ(a, b) ASSERT_TRUE((a) == (b))
#define test_log(...)   printf(__VA_ARGS__)

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
		mseries__observe(ser, 0.001 * (double)(i % 1000) + 0.0005, 1);
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

static void memory_per_series(void)
{
	struct mmetric_desc d = {
		.name = "http.server.request.count",
		.unit = "{request}",
		.instrument = MI_COUNTER,
	};
	struct mem_figures f;
	bool real = malloc_measurable();

	ASSERT_EQ(fill(&d, 100000, false, false, false, &f), 0);
	test_log("counter, 6 shared labels: %.0f B/series (store), %.0f "
		 "B/series (mallinfo2)\n",
		 f.store_per_series, f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 200, "%.0f", f.store_per_series);
	if (real)
		ASSERT_TRUE(f.malloc_per_series <= 200, "%.0f",
			    f.malloc_per_series);

	ASSERT_EQ(fill(&d, 100000, true, false, false, &f), 0);
	test_log("counter, one unique label value: %.0f B/series (store), "
		 "%.0f (mallinfo2)\n",
		 f.store_per_series, f.malloc_per_series);
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
		 "%.0f (mallinfo2)\n",
		 f.store_per_series, f.malloc_per_series);
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
	test_log(
		"exponential histogram, 1 observation: %.0f B/series "
		"(store), %.0f (mallinfo2); each extra populated bucket "
		"costs 1 to 8 B (counts widen as they grow), at most 160 per sign\n",
		f.store_per_series, f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 1024, "%.0f", f.store_per_series);
	ASSERT_EQ(fill(&d, 5000, false, false, true, &f), 0);
	test_log("exponential histogram, 1 ms..1 s spread (160 buckets): "
		 "%.0f B/series (store), %.0f (mallinfo2)\n",
		 f.store_per_series, f.malloc_per_series);
	ASSERT_TRUE(f.store_per_series <= 2048, "%.0f", f.store_per_series);
}

static void lookup_cost(void)
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

/* Scrape cost at the per-metric cap times ten: the figure for make bench. */
static void scrape_100k_series(void)
{
	struct mstore_opts o = { .max_series_per_metric = 200000 };
	struct mmetric_desc c = {
		.name = "gateway.requests",
		.description = "Requests.",
		.unit = "{request}",
		.instrument = MI_COUNTER,
		.is_int = true,
	};
	struct mstore *st = mstore__new(&o);
	int id = mstore__add_metric(st, &c), i;
	struct timespec a, b;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	double ms;

	mstore__lock(st);
	for (i = 0; i < 100000; i++) {
		char route[48], pod[32];
		struct mlabel l[] = {
			{ "http.route", route },
			{ "http.response.status_code", i % 3 ? "200" : "503" },
			{ "k8s.pod.name", pod },
		};

		snprintf(route, sizeof(route), "/api/v1/svc-%d", i / 3 % 500);
		snprintf(pod, sizeof(pod), "gw-%d", i / 1500);
		mseries__add(mstore__series(st, id, l, 3), i, 1);
	}
	mstore__unlock(st);
	f = open_memstream(&buf, &len);
	ASSERT_TRUE(f);
	clock_gettime(CLOCK_MONOTONIC, &a);
	ASSERT_EQ(prom_text__write(f, st, PROM_FMT_TEXT, 2), 0);
	fclose(f);
	clock_gettime(CLOCK_MONOTONIC, &b);
	ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
	test_log("100k counter series: %.1f ms, %zu bytes of text\n", ms, len);
	ASSERT_TRUE(strstr(buf, "gateway_requests_total{"
				"http_response_status_code=\"503\","
				"http_route=\"/api/v1/svc-333\","
				"k8s_pod_name=\"gw-66\"} 99999\n"));
	ASSERT_TRUE(ms < 5000, "%.0f ms", ms);
	free(buf);
	mstore__free(st);
}

int main(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	memory_per_series();
	lookup_cost();
	scrape_100k_series();
	return misses ? 1 : 0;
}
