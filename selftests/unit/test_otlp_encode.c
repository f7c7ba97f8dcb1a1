// SPDX-License-Identifier: Apache-2.0
/*
 * Encoder tests: points go in the way mstore__collect hands them to a
 * visitor, the packed request is decoded again with protobuf-c (and with
 * protoc and our .proto) and every field checked.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

#include "exporter/otlp_encode.h"
#include "exporter/otlp_gzip.h"
#include "exporter/otlp_pb.h"
#include "selftests/unit/test.h"

#define T0 1700000000000000000ULL
#define T1 1700000010000000000ULL

static const struct mlabel res_attrs[] = {
	{ "host.name", "node-a" },
	{ "k8s.node.name", "node-a" },
	{ "k8s.cluster.uid", "c-123" },
	{ "k8s.pod.name", "" }, /* unknown: left out */
};

static struct otlp_encoder *new_encoder(void)
{
	struct otlp_encode_opts o = {
		.resource = res_attrs,
		.nresource = 4,
		.scope_version = "1.2.3",
	};

	return otlp_encoder__new(&o);
}

static const char *kv_get(otlp_pb_kv **kv, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(kv[i]->key, key) && kv[i]->value &&
		    kv[i]->value->value_case ==
			    OTLP_PBC(ANY_VALUE__VALUE_STRING_VALUE))
			return kv[i]->value->string_value;
	return NULL;
}

static otlp_pb_metric *find_metric(otlp_pb_request *r, const char *name)
{
	otlp_pb_scope_metrics *sm = r->resource_metrics[0]->scope_metrics[0];
	size_t i;

	for (i = 0; i < sm->n_metrics; i++)
		if (!strcmp(sm->metrics[i]->name, name))
			return sm->metrics[i];
	return NULL;
}

/* Feed a set of metrics of every kind, as mstore__collect would. */
static int feed_all_kinds(struct otlp_encoder *e)
{
	static const struct mlabel l_get[] = {
		{ "http.request.method", "GET" },
		{ "http.route", "/api" },
	};
	static const struct mlabel l_post[] = {
		{ "http.request.method", "POST" },
		{ "http.route", "/api" },
	};
	static const double bounds[] = { 0.005, 0.01, 0.1, 1 };
	static const uint64_t counts[] = { 1, 2, 0, 3, 4 };
	static const uint64_t pos[] = { 5, 0, 7 };
	static const uint64_t neg[] = { 1 };
	struct mmetric_desc counter = {
		.name = "http.server.requests",
		.description = "Requests",
		.unit = "{request}",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct mmetric_desc updown = {
		.name = "http.server.active",
		.unit = "{request}",
		.instrument = MI_UPDOWN,
		.temporality = MT_CUMULATIVE,
		.is_int = false,
	};
	struct mmetric_desc gauge = {
		.name = "milometer.routes",
		.unit = "1",
		.instrument = MI_GAUGE,
		.is_int = true,
	};
	struct mmetric_desc hist = {
		.name = "http.server.request.duration",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.temporality = MT_DELTA,
		.hist = MH_EXPLICIT,
		.bounds = bounds,
		.nbounds = 4,
	};
	struct mmetric_desc ehist = {
		.name = "http.server.response.body.size",
		.unit = "By",
		.instrument = MI_HISTOGRAM,
		.temporality = MT_CUMULATIVE,
		.hist = MH_EXPONENTIAL,
	};
	struct mhist_explicit_view hv = { bounds, 4, counts };
	struct mhist_exp_view ev = {
		.scale = 3,
		.zero_count = 2,
		.pos_offset = -4,
		.pos_counts = pos,
		.pos_n = 3,
		.neg_offset = 7,
		.neg_counts = neg,
		.neg_n = 1,
	};
	struct mpoint_view cp[2] = {
		{ .labels = l_get,
		  .nlabels = 2,
		  .start_ns = T0,
		  .time_ns = T1,
		  .ivalue = 42 },
		{ .labels = l_post,
		  .nlabels = 2,
		  .start_ns = T0,
		  .time_ns = T1,
		  .ivalue = -7 },
	};
	struct mpoint_view up = { .start_ns = T0, .time_ns = T1, .value = 2.5 };
	struct mpoint_view gp = { .start_ns = T0, .time_ns = T1, .ivalue = 12 };
	struct mpoint_view hp = {
		.labels = l_get,
		.nlabels = 2,
		.start_ns = T0,
		.time_ns = T1,
		.count = 10,
		.sum = 3.25,
		.min = 0.001,
		.max = 2.0,
		.explicit_h = &hv,
	};
	struct mpoint_view hp_empty = {
		.labels = l_post,
		.nlabels = 2,
		.start_ns = T0,
		.time_ns = T1,
		.explicit_h = &hv,
	};
	struct mpoint_view hps[2] = { hp, hp_empty };
	struct mpoint_view ep = {
		.start_ns = T0,
		.time_ns = T1,
		.count = 15,
		.sum = 1234.5,
		.min = -3,
		.max = 900,
		.exp_h = &ev,
	};
	int err;

	hps[1].count = 0;
	err = otlp_encoder__add(e, &counter, cp, 2);
	err = err ?: otlp_encoder__add(e, &updown, &up, 1);
	err = err ?: otlp_encoder__add(e, &gauge, &gp, 1);
	err = err ?: otlp_encoder__add(e, &hist, hps, 2);
	err = err ?: otlp_encoder__add(e, &ehist, &ep, 1);
	/* A metric without points is not sent. */
	err = err ?: otlp_encoder__add(e, &gauge, NULL, 0);
	return err;
}

TEST(otlp_encode_round_trip)
{
	struct otlp_encoder *e = new_encoder();
	otlp_pb_request *r = NULL;
	otlp_pb_resource *res;
	otlp_pb_scope_metrics *sm;
	otlp_pb_metric *m;
	otlp_pb_number_dp *np;
	otlp_pb_histogram_dp *hp;
	otlp_pb_exp_histogram_dp *ep;
	static const uint64_t want_counts[] = { 1, 2, 0, 3, 4 };
	void *buf = NULL;
	size_t len = 0, i;
	int n;

	ASSERT_TRUE(e);
	ASSERT_EQ(feed_all_kinds(e), 0);
	n = otlp_encoder__finish(e, &buf, &len);
	ASSERT_EQ(n, 7);
	ASSERT_TRUE(buf && len > 0);
	r = otlp_pb_request__unpack(buf, len);
	free(buf);
	ASSERT_TRUE(r, "request does not decode");
	ASSERT_EQ(r->n_resource_metrics, 1);

	res = r->resource_metrics[0]->resource;
	ASSERT_TRUE(res);
	ASSERT_EQ(res->n_attributes, 5);
	ASSERT_STREQ(kv_get(res->attributes, 5, "service.name"), "milometer");
	ASSERT_STREQ(kv_get(res->attributes, 5, "service.version"), "1.2.3");
	ASSERT_STREQ(kv_get(res->attributes, 5, "host.name"), "node-a");
	ASSERT_STREQ(kv_get(res->attributes, 5, "k8s.node.name"), "node-a");
	ASSERT_STREQ(kv_get(res->attributes, 5, "k8s.cluster.uid"), "c-123");
	ASSERT_TRUE(!kv_get(res->attributes, 5, "k8s.pod.name"));

	ASSERT_EQ(r->resource_metrics[0]->n_scope_metrics, 1);
	sm = r->resource_metrics[0]->scope_metrics[0];
	ASSERT_STREQ(sm->scope->name, "milometer");
	ASSERT_STREQ(sm->scope->version, "1.2.3");
	ASSERT_EQ(sm->n_metrics, 5);

	m = find_metric(r, "http.server.requests");
	ASSERT_TRUE(m);
	ASSERT_STREQ(m->description, "Requests");
	ASSERT_STREQ(m->unit, "{request}");
	ASSERT_EQ(m->data_case, OTLP_PBC(METRIC__DATA_SUM));
	ASSERT_TRUE(m->sum->is_monotonic);
	ASSERT_EQ(m->sum->aggregation_temporality, 1);
	ASSERT_EQ(m->sum->n_data_points, 2);
	np = m->sum->data_points[0];
	ASSERT_EQ(np->value_case, OTLP_PBC(NUMBER_DATA_POINT__VALUE_AS_INT));
	ASSERT_EQ(np->as_int, 42);
	ASSERT_EQ(np->start_time_unix_nano, T0);
	ASSERT_EQ(np->time_unix_nano, T1);
	ASSERT_EQ(np->n_attributes, 2);
	ASSERT_STREQ(kv_get(np->attributes, 2, "http.request.method"), "GET");
	ASSERT_STREQ(kv_get(np->attributes, 2, "http.route"), "/api");
	np = m->sum->data_points[1];
	ASSERT_EQ(np->as_int, -7);
	ASSERT_STREQ(kv_get(np->attributes, 2, "http.request.method"), "POST");

	m = find_metric(r, "http.server.active");
	ASSERT_TRUE(m);
	ASSERT_EQ(m->data_case, OTLP_PBC(METRIC__DATA_SUM));
	ASSERT_TRUE(!m->sum->is_monotonic);
	ASSERT_EQ(m->sum->aggregation_temporality, 2);
	np = m->sum->data_points[0];
	ASSERT_EQ(np->value_case, OTLP_PBC(NUMBER_DATA_POINT__VALUE_AS_DOUBLE));
	ASSERT_NEAR(np->as_double, 2.5, 0);
	ASSERT_EQ(np->n_attributes, 0);

	m = find_metric(r, "milometer.routes");
	ASSERT_TRUE(m);
	ASSERT_EQ(m->data_case, OTLP_PBC(METRIC__DATA_GAUGE));
	np = m->gauge->data_points[0];
	ASSERT_EQ(np->as_int, 12);
	ASSERT_EQ(np->start_time_unix_nano, 0);
	ASSERT_EQ(np->time_unix_nano, T1);

	m = find_metric(r, "http.server.request.duration");
	ASSERT_TRUE(m);
	ASSERT_STREQ(m->unit, "s");
	ASSERT_EQ(m->data_case, OTLP_PBC(METRIC__DATA_HISTOGRAM));
	ASSERT_EQ(m->histogram->aggregation_temporality, 1);
	ASSERT_EQ(m->histogram->n_data_points, 2);
	hp = m->histogram->data_points[0];
	ASSERT_EQ(hp->count, 10);
	ASSERT_EQ(hp->opt_sum_case,
		  OTLP_PBC(HISTOGRAM_DATA_POINT__OPT_SUM_SUM));
	ASSERT_NEAR(hp->sum, 3.25, 0);
	ASSERT_EQ(hp->opt_min_case,
		  OTLP_PBC(HISTOGRAM_DATA_POINT__OPT_MIN_MIN));
	ASSERT_NEAR(hp->min, 0.001, 0);
	ASSERT_NEAR(hp->max, 2.0, 0);
	ASSERT_EQ(hp->start_time_unix_nano, T0);
	ASSERT_EQ(hp->n_explicit_bounds, 4);
	ASSERT_EQ(hp->n_bucket_counts, 5);
	ASSERT_NEAR(hp->explicit_bounds[0], 0.005, 0);
	ASSERT_NEAR(hp->explicit_bounds[3], 1, 0);
	for (i = 0; i < 5; i++)
		ASSERT_EQ(hp->bucket_counts[i], want_counts[i]);
	ASSERT_STREQ(kv_get(hp->attributes, 2, "http.request.method"), "GET");
	/* No observations: min/max are absent, not 0. */
	hp = m->histogram->data_points[1];
	ASSERT_EQ(hp->count, 0);
	ASSERT_EQ(hp->opt_min_case, 0);
	ASSERT_EQ(hp->opt_max_case, 0);

	m = find_metric(r, "http.server.response.body.size");
	ASSERT_TRUE(m);
	ASSERT_EQ(m->data_case, OTLP_PBC(METRIC__DATA_EXPONENTIAL_HISTOGRAM));
	ASSERT_EQ(m->exponential_histogram->aggregation_temporality, 2);
	ep = m->exponential_histogram->data_points[0];
	ASSERT_EQ(ep->count, 15);
	ASSERT_NEAR(ep->sum, 1234.5, 0);
	ASSERT_NEAR(ep->min, -3, 0);
	ASSERT_NEAR(ep->max, 900, 0);
	ASSERT_EQ(ep->scale, 3);
	ASSERT_EQ(ep->zero_count, 2);
	ASSERT_TRUE(ep->positive && ep->negative);
	ASSERT_EQ(ep->positive->offset, -4);
	ASSERT_EQ(ep->positive->n_bucket_counts, 3);
	ASSERT_EQ(ep->positive->bucket_counts[0], 5);
	ASSERT_EQ(ep->positive->bucket_counts[2], 7);
	ASSERT_EQ(ep->negative->offset, 7);
	ASSERT_EQ(ep->negative->n_bucket_counts, 1);
	ASSERT_EQ(ep->negative->bucket_counts[0], 1);
	ASSERT_EQ(ep->start_time_unix_nano, T0);

	otlp_pb_request__free(r);

	/* finish() reset the encoder: nothing more to send. */
	ASSERT_EQ(otlp_encoder__finish(e, &buf, &len), 0);
	ASSERT_TRUE(!buf && len == 0);
	otlp_encoder__free(e);
}

/* Exact bytes for a tiny request, so a field number change cannot slip by
 * even if protobuf-c decodes its own mistake back consistently. */
TEST(otlp_encode_wire_bytes)
{
	static const struct mlabel l[] = { { "k", "v" } };
	struct mmetric_desc d = {
		.name = "m",
		.unit = "s",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct mpoint_view p = { .labels = l,
				 .nlabels = 1,
				 .start_ns = 1,
				 .time_ns = 2,
				 .ivalue = 3 };
	struct otlp_encode_opts o = {
		.resource = (struct mlabel[]){ { "service.name", "x" },
					       { "service.version", "1" } },
		.nresource = 2,
		.scope_name = "s",
		.scope_version = "1",
	};
	struct otlp_encoder *e = otlp_encoder__new(&o);
	otlp_pb_request *r;
	uint8_t *b;
	void *buf;
	size_t len;

	ASSERT_TRUE(e);
	ASSERT_EQ(otlp_encoder__add(e, &d, &p, 1), 0);
	ASSERT_EQ(otlp_encoder__finish(e, &buf, &len), 1);
	b = buf;
	/*
	 * Walk the scope_metrics -> metric -> sum -> point path by tags:
	 * ScopeMetrics is field 2 of ResourceMetrics; Metric field 2 of
	 * ScopeMetrics; name 1, unit 3, sum 7; Sum: data_points 1,
	 * aggregation_temporality 2, is_monotonic 3; NumberDataPoint:
	 * start 2 (fixed64), time 3 (fixed64), as_int 6 (sfixed64),
	 * attributes 7.
	 */
	{
		/* clang-format off */
		static const uint8_t metric[] = {
			0x0a, 0x01, 'm',          /* name = 1 */
			0x1a, 0x01, 's',          /* unit = 3 */
			0x3a, 0x2b,               /* sum = 7 */
			0x0a, 0x25,               /* data_points = 1 */
			0x11, 1, 0, 0, 0, 0, 0, 0, 0, /* start = 2, fixed64 */
			0x19, 2, 0, 0, 0, 0, 0, 0, 0, /* time = 3, fixed64 */
			0x31, 3, 0, 0, 0, 0, 0, 0, 0, /* as_int = 6 */
			0x3a, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 0x0a, 0x01,
			'v',                      /* attributes = 7 */
			0x10, 0x01,               /* temporality = 2: DELTA */
			0x18, 0x01,               /* is_monotonic = 3 */
		};
		/* clang-format on */

		ASSERT_TRUE(memmem(b, len, metric, sizeof(metric)),
			    "metric bytes not found in the request");
	}
	r = otlp_pb_request__unpack(buf, len);
	ASSERT_TRUE(r);
	otlp_pb_request__free(r);
	free(buf);
	otlp_encoder__free(e);
}

static const char *proto_path(void)
{
	return access("exporter/otlp_metrics.proto", R_OK) ? NULL : "exporter";
}

/* protoc with our .proto decodes what we send under upstream's name. */
TEST(otlp_encode_protoc_decode)
{
	struct otlp_encoder *e = new_encoder();
	char in[512], out[512], cmd[2048], text[65536];
	void *buf;
	size_t len, n;
	FILE *f;
	int st;

	ASSERT_TRUE(proto_path(), "run from the repository root");
	ASSERT_TRUE(e);
	ASSERT_EQ(feed_all_kinds(e), 0);
	ASSERT_EQ(otlp_encoder__finish(e, &buf, &len), 7);
	otlp_encoder__free(e);
	snprintf(in, sizeof(in), "%s/req.pb", test__tmpdir());
	snprintf(out, sizeof(out), "%s/req.txt", test__tmpdir());
	f = fopen(in, "w");
	ASSERT_TRUE(f);
	ASSERT_EQ(fwrite(buf, 1, len, f), len);
	fclose(f);
	free(buf);
	snprintf(cmd, sizeof(cmd),
		 "protoc --proto_path=exporter --decode="
		 "opentelemetry.proto.collector.metrics.v1."
		 "ExportMetricsServiceRequest exporter/otlp_metrics.proto "
		 "< %s > %s 2>&1",
		 in, out);
	st = system(cmd);
	f = fopen(out, "r");
	ASSERT_TRUE(f);
	n = fread(text, 1, sizeof(text) - 1, f);
	fclose(f);
	text[n] = 0;
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0, "protoc: %s", text);
	ASSERT_TRUE(strstr(text, "name: \"http.server.requests\""));
	ASSERT_TRUE(strstr(
		text,
		"aggregation_temporality: AGGREGATION_TEMPORALITY_DELTA"));
	ASSERT_TRUE(strstr(
		text,
		"aggregation_temporality: AGGREGATION_TEMPORALITY_CUMULATIVE"));
	ASSERT_TRUE(strstr(text, "is_monotonic: true"));
	ASSERT_TRUE(strstr(text, "as_int: 42"));
	ASSERT_TRUE(strstr(text, "as_int: -7"));
	ASSERT_TRUE(strstr(text, "as_double: 2.5"));
	ASSERT_TRUE(strstr(text, "start_time_unix_nano: 1700000000000000000"));
	ASSERT_TRUE(strstr(text, "explicit_bounds: 0.005"));
	ASSERT_TRUE(strstr(text, "exponential_histogram {"));
	ASSERT_TRUE(strstr(text, "scale: 3"));
	ASSERT_TRUE(strstr(text, "offset: -4"));
	ASSERT_TRUE(strstr(text, "string_value: \"milometer\""));
	ASSERT_TRUE(strstr(text, "key: \"k8s.cluster.uid\""));
	ASSERT_TRUE(!strstr(text, "1000:"), "unknown fields: %s", text);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/*
 * The encode cost the benchmark reports: 10k series of one delta counter
 * with three attributes each, plus 1k explicit-histogram series.
 */
TEST(otlp_encode_bench_10k)
{
	enum { NS = 10000, NH = 1000 };
	static const double bounds[] = { 0.005, 0.01, 0.025, 0.05, 0.075,
					 0.1,   0.25, 0.5,   0.75, 1,
					 2.5,   5,    7.5,   10 };
	uint64_t counts[15] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13 };
	struct mhist_explicit_view hv = { bounds, 14, counts };
	struct mmetric_desc c = {
		.name = "http.server.requests",
		.unit = "{request}",
		.instrument = MI_COUNTER,
		.temporality = MT_DELTA,
		.is_int = true,
	};
	struct mmetric_desc h = {
		.name = "http.server.request.duration",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.temporality = MT_DELTA,
		.bounds = bounds,
		.nbounds = 14,
	};
	struct mpoint_view *pts = calloc(NS, sizeof(*pts));
	struct mlabel *lab = calloc(NS * 3, sizeof(*lab));
	char(*route)[32] = calloc(NS, 32);
	struct otlp_encoder *e = new_encoder();
	uint64_t t, best = UINT64_MAX;
	size_t len = 0, zlen = 0;
	void *buf, *z;
	int i, round;

	ASSERT_TRUE(pts && lab && route && e);
	for (i = 0; i < NS; i++) {
		snprintf(route[i], 32, "/api/v1/route-%05d", i);
		lab[i * 3] = (struct mlabel){ "http.request.method", "GET" };
		lab[i * 3 + 1] =
			(struct mlabel){ "http.response.status_code", "200" };
		lab[i * 3 + 2] = (struct mlabel){ "http.route", route[i] };
		pts[i] = (struct mpoint_view){
			.labels = &lab[i * 3],
			.nlabels = 3,
			.start_ns = T0,
			.time_ns = T1,
			.ivalue = i,
			.count = 91,
			.sum = 12.5,
			.min = 0.001,
			.max = 9,
			.explicit_h = &hv,
		};
	}
	for (round = 0; round < 5; round++) {
		t = now_ns();
		ASSERT_EQ(otlp_encoder__add(e, &c, pts, NS), 0);
		ASSERT_EQ(otlp_encoder__add(e, &h, pts, NH), 0);
		ASSERT_EQ(otlp_encoder__finish(e, &buf, &len), NS + NH);
		t = now_ns() - t;
		if (t < best)
			best = t;
		if (round < 4)
			free(buf);
	}
	t = now_ns();
	ASSERT_EQ(otlp_gzip__compress(buf, len, &z, &zlen), 0);
	t = now_ns() - t;
	free(buf);
	free(z);
	test_log("otlp encode: %d counter + %d histogram series: %.2f ms, "
		 "%zu bytes (%.1f B/series), %.0f ns/series; gzip %.2f ms "
		 "-> %zu bytes\n",
		 NS, NH, best / 1e6, len, (double)len / (NS + NH),
		 (double)best / (NS + NH), t / 1e6, zlen);
	otlp_encoder__free(e);
	free(pts);
	free(lab);
	free(route);
}

struct split_seen {
	int requests;
	size_t points;
	char names[16][64];
	size_t npoints[16];
	bool bad;
};

static int collect_split(void *ctx, void *buf, size_t len, size_t npoints)
{
	struct split_seen *ss = ctx;
	otlp_pb_request *r = otlp_pb_request__unpack(buf, len);
	otlp_pb_scope_metrics *sm;
	size_t i, o = 0;

	free(buf);
	if (!r || ss->requests >= 16) {
		ss->bad = true;
		return -EINVAL;
	}
	sm = r->resource_metrics[0]->scope_metrics[0];
	/* every request carries the resource and scope */
	if (!r->resource_metrics[0]->resource ||
	    strcmp(sm->scope->name, "milometer"))
		ss->bad = true;
	for (i = 0; i < sm->n_metrics; i++)
		o += snprintf(ss->names[ss->requests] + o, 64 - o, "%s%s",
			      i ? "+" : "", sm->metrics[i]->name);
	ss->npoints[ss->requests++] = npoints;
	ss->points += npoints;
	otlp_pb_request__free(r);
	return 0;
}

TEST(otlp_encode_split_requests)
{
	struct otlp_encoder *e = new_encoder();
	struct split_seen ss = {};

	ASSERT_TRUE(e);
	ASSERT_EQ(feed_all_kinds(e), 0);
	ASSERT_EQ(otlp_encoder__finish_split(e, 3, collect_split, &ss), 7);
	ASSERT_TRUE(!ss.bad);
	ASSERT_EQ(ss.requests, 3);
	ASSERT_STREQ(ss.names[0], "http.server.requests+http.server.active");
	ASSERT_STREQ(ss.names[1],
		     "milometer.routes+http.server.request.duration");
	ASSERT_STREQ(ss.names[2], "http.server.response.body.size");
	ASSERT_EQ(ss.npoints[0], 3);
	ASSERT_EQ(ss.npoints[2], 1);

	/* One point per request: the 2-point metrics span two requests. */
	memset(&ss, 0, sizeof(ss));
	ASSERT_EQ(feed_all_kinds(e), 0);
	ASSERT_EQ(otlp_encoder__finish_split(e, 1, collect_split, &ss), 7);
	ASSERT_TRUE(!ss.bad);
	ASSERT_EQ(ss.requests, 7);
	ASSERT_STREQ(ss.names[0], "http.server.requests");
	ASSERT_STREQ(ss.names[1], "http.server.requests");
	ASSERT_STREQ(ss.names[5], "http.server.request.duration");
	otlp_encoder__free(e);
}
