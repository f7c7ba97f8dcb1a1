// SPDX-License-Identifier: Apache-2.0
/* The encoder fed by the real metric store, two delta intervals in a row. */
#include <stdlib.h>
#include <time.h>

#include "exporter/otlp_encode.h"
#include "exporter/otlp_pb.h"
#include "selftests/unit/test.h"

#define SEC 1000000000ULL
#define T0  (1700000000ULL * SEC)

static otlp_pb_metric *metric(otlp_pb_request *r, const char *name)
{
	otlp_pb_scope_metrics *sm = r->resource_metrics[0]->scope_metrics[0];
	size_t i;

	for (i = 0; i < sm->n_metrics; i++)
		if (!strcmp(sm->metrics[i]->name, name))
			return sm->metrics[i];
	return NULL;
}

TEST(otlp_store_delta_intervals)
{
	struct mstore_opts so = { .keep_delta = true };
	struct mmetric_desc req = {
		.name = "http.server.requests",
		.unit = "{request}",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct mmetric_desc dur = {
		.name = "http.server.request.duration",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.temporality = MT_DELTA,
		.hist = MH_EXPLICIT,
	};
	struct mmetric_desc cum = {
		.name = "milometer.events",
		.unit = "1",
		.instrument = MI_COUNTER,
		.temporality = MT_CUMULATIVE,
		.is_int = true,
	};
	static const struct mlabel l[] = { { "http.route", "/a" } };
	struct mstore *st = mstore__new(&so);
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	struct mseries *s1, *s2, *s3;
	otlp_pb_request *r;
	otlp_pb_metric *m;
	otlp_pb_histogram_dp *hp;
	int id1, id2, id3;
	size_t len;
	void *buf;

	ASSERT_TRUE(st && e);
	id1 = mstore__add_metric(st, &req);
	id2 = mstore__add_metric(st, &dur);
	id3 = mstore__add_metric(st, &cum);
	ASSERT_TRUE(id1 >= 0 && id2 >= 0 && id3 >= 0);
	mstore__lock(st);
	s1 = mstore__series(st, id1, l, 1);
	s2 = mstore__series(st, id2, l, 1);
	s3 = mstore__series(st, id3, l, 1);
	ASSERT_TRUE(s1 && s2 && s3);
	mseries__add(s1, 3, T0 + 1 * SEC);
	mseries__observe(s2, 0.02, T0 + 1 * SEC);
	mseries__observe(s2, 0.3, T0 + 1 * SEC);
	mseries__add(s3, 5, T0 + 1 * SEC);
	mstore__unlock(st);

	ASSERT_EQ(otlp_encode__store(e, st, T0 + 10 * SEC, &buf, &len), 3);
	r = otlp_pb_request__unpack(buf, len);
	free(buf);
	ASSERT_TRUE(r);
	m = metric(r, "http.server.requests");
	ASSERT_TRUE(m && m->data_case == OTLP_PBC(METRIC__DATA_SUM));
	ASSERT_EQ(m->sum->aggregation_temporality, 1);
	ASSERT_EQ(m->sum->data_points[0]->as_int, 3);
	ASSERT_EQ(m->sum->data_points[0]->time_unix_nano, T0 + 10 * SEC);
	ASSERT_STREQ(m->sum->data_points[0]->attributes[0]->value->string_value,
		     "/a");
	m = metric(r, "http.server.request.duration");
	ASSERT_TRUE(m && m->data_case == OTLP_PBC(METRIC__DATA_HISTOGRAM));
	hp = m->histogram->data_points[0];
	ASSERT_EQ(hp->count, 2);
	ASSERT_NEAR(hp->sum, 0.32, 1e-12);
	ASSERT_NEAR(hp->min, 0.02, 0);
	ASSERT_NEAR(hp->max, 0.3, 0);
	ASSERT_TRUE(hp->n_explicit_bounds > 0);
	ASSERT_EQ(hp->n_bucket_counts, hp->n_explicit_bounds + 1);
	m = metric(r, "milometer.events");
	ASSERT_TRUE(m);
	ASSERT_EQ(m->sum->aggregation_temporality, 2);
	otlp_pb_request__free(r);

	/* Second interval: deltas restart from the previous collection. */
	mstore__lock(st);
	mseries__add(s1, 4, T0 + 12 * SEC);
	mseries__add(s3, 1, T0 + 12 * SEC);
	mstore__unlock(st);
	ASSERT_TRUE(otlp_encode__store(e, st, T0 + 20 * SEC, &buf, &len) >= 2);
	r = otlp_pb_request__unpack(buf, len);
	free(buf);
	ASSERT_TRUE(r);
	m = metric(r, "http.server.requests");
	ASSERT_TRUE(m);
	ASSERT_EQ(m->sum->data_points[0]->as_int, 4);
	ASSERT_EQ(m->sum->data_points[0]->start_time_unix_nano, T0 + 10 * SEC);
	m = metric(r, "milometer.events");
	ASSERT_TRUE(m);
	ASSERT_EQ(m->sum->data_points[0]->as_int, 6);
	otlp_pb_request__free(r);

	otlp_encoder__free(e);
	mstore__free(st);
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * SEC + ts.tv_nsec;
}

/* What one OTLP export interval costs with 10k live series in the store:
 * collect (delta view) + encode, the figure `make bench` reports. */
TEST(otlp_store_bench_10k)
{
	enum { NS = 10000 };
	struct mstore_opts so = { .keep_delta = true };
	struct mmetric_desc req = {
		.name = "http.server.requests",
		.unit = "{request}",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct mstore *st = mstore__new(&so);
	struct otlp_encoder *e = otlp_encoder__new(NULL);
	uint64_t t, best = UINT64_MAX, now = T0;
	char route[32];
	size_t len = 0;
	void *buf;
	int id, i, round;

	ASSERT_TRUE(st && e);
	id = mstore__add_metric(st, &req);
	ASSERT_TRUE(id >= 0);
	for (round = 0; round < 5; round++) {
		mstore__lock(st);
		for (i = 0; i < NS; i++) {
			struct mlabel l[3] = {
				{ "http.request.method", "GET" },
				{ "http.response.status_code", "200" },
				{ "http.route", route },
			};
			struct mseries *ser;

			snprintf(route, sizeof(route), "/api/v1/route-%05d", i);
			ser = mstore__series(st, id, l, 3);
			ASSERT_TRUE(ser);
			mseries__add(ser, 1, now);
		}
		mstore__unlock(st);
		now += 10 * SEC;
		t = mono_ns();
		ASSERT_EQ(otlp_encode__store(e, st, now, &buf, &len), NS);
		t = mono_ns() - t;
		if (t < best)
			best = t;
		free(buf);
	}
	test_log("otlp collect+encode, %d delta series from the store: "
		 "%.2f ms, %zu bytes\n",
		 NS, best / 1e6, len);
	otlp_encoder__free(e);
	mstore__free(st);
}
