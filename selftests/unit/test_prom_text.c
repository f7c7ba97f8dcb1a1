// SPDX-License-Identifier: Apache-2.0
/*
 * Exposition: golden text 0.0.4 and OpenMetrics output (escaping of HELP and
 * label values, label-name collisions, counters, gauges, explicit and
 * exponential histograms), number formatting, content negotiation, and
 * promtool's verdict on tricky output.
 */
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>

#include "exporter/prom_text.h"
#include "selftests/unit/test.h"

static struct mstore *sample_store(void)
{
	static const double b[] = { 0.1, 1 };
	struct mmetric_desc c = {
		.name = "http.server.requests",
		.description = "Requests \"served\" by route\\gateway\n"
			       "second line",
		.unit = "{request}",
		.instrument = MI_COUNTER,
		.is_int = true,
	};
	struct mmetric_desc h = {
		.name = "http.server.request.duration",
		.description = "Duration.",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.bounds = b,
		.nbounds = 2,
	};
	struct mmetric_desc g = {
		.name = "cpu.utilization",
		.description = "CPU.",
		.unit = "1",
		.instrument = MI_GAUGE,
	};
	struct mmetric_desc x = {
		.name = "rpc.latency",
		.description = "Latency.",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.hist = MH_EXPONENTIAL,
		.exp_max_scale = 1,
	};
	struct mlabel l1[] = { { "http.route", "/a\"b\\c\nd" },
			       { "http.request.method", "GET" } };
	/* three OTel keys, one Prometheus name: values joined by key order */
	struct mlabel l2[] = { { "a.b", "1" }, { "a-b", "2" }, { "a_b", "3" } };
	struct mstore *st = mstore__new(NULL);
	int ic = mstore__add_metric(st, &c), ih = mstore__add_metric(st, &h);
	int ig = mstore__add_metric(st, &g), ix = mstore__add_metric(st, &x);
	struct mseries *s;

	mstore__lock(st);
	mseries__add(mstore__series(st, ic, l1, 2), 3, 1);
	mseries__add(mstore__series(st, ic, l2, 3), 1234567, 1);
	s = mstore__series(st, ih, l1 + 1, 1);
	mseries__observe(s, 0.05, 1);
	mseries__observe(s, 0.1, 1);
	mseries__observe(s, 0.5, 1);
	mseries__observe(s, 3, 1);
	mseries__set(mstore__series(st, ig, NULL, 0), 0.25, 1);
	s = mstore__series(st, ix, NULL, 0);
	mseries__observe(s, -3, 1);
	mseries__observe(s, 0, 1);
	mseries__observe(s, 1.5, 1);
	mseries__observe(s, 3, 1);
	mstore__unlock(st);
	return st;
}

static char *render(struct mstore *st, enum prom_format fmt)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	if (prom_text__write(f, st, fmt, 2)) {
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	return buf;
}

static const char golden_text[] =
	"# HELP http_server_requests_total Requests \"served\" by route\\\\gateway\\nsecond line\n"
	"# TYPE http_server_requests_total counter\n"
	"http_server_requests_total{a_b=\"2;1;3\"} 1234567\n"
	"http_server_requests_total{http_request_method=\"GET\",http_route=\"/a\\\"b\\\\c\\nd\"} 3\n"
	"# HELP http_server_request_duration_seconds Duration.\n"
	"# TYPE http_server_request_duration_seconds histogram\n"
	"http_server_request_duration_seconds_bucket{http_request_method=\"GET\",le=\"0.1\"} 2\n"
	"http_server_request_duration_seconds_bucket{http_request_method=\"GET\",le=\"1\"} 3\n"
	"http_server_request_duration_seconds_bucket{http_request_method=\"GET\",le=\"+Inf\"} 4\n"
	"http_server_request_duration_seconds_sum{http_request_method=\"GET\"} 3.65\n"
	"http_server_request_duration_seconds_count{http_request_method=\"GET\"} 4\n"
	"# HELP cpu_utilization_ratio CPU.\n"
	"# TYPE cpu_utilization_ratio gauge\n"
	"cpu_utilization_ratio 0.25\n"
	"# HELP rpc_latency_seconds Latency.\n"
	"# TYPE rpc_latency_seconds histogram\n"
	"rpc_latency_seconds_bucket{le=\"-2.8284271247461903\"} 1\n"
	"rpc_latency_seconds_bucket{le=\"0\"} 2\n"
	"rpc_latency_seconds_bucket{le=\"2\"} 3\n"
	"rpc_latency_seconds_bucket{le=\"2.8284271247461903\"} 3\n"
	"rpc_latency_seconds_bucket{le=\"4\"} 4\n"
	"rpc_latency_seconds_bucket{le=\"+Inf\"} 4\n"
	"rpc_latency_seconds_sum 1.5\n"
	"rpc_latency_seconds_count 4\n";

static const char golden_om[] =
	"# HELP http_server_requests Requests \\\"served\\\" by route\\\\gateway\\nsecond line\n"
	"# TYPE http_server_requests counter\n"
	"http_server_requests_total{a_b=\"2;1;3\"} 1234567\n"
	"http_server_requests_total{http_request_method=\"GET\",http_route=\"/a\\\"b\\\\c\\nd\"} 3\n"
	"# HELP http_server_request_duration_seconds Duration.\n"
	"# TYPE http_server_request_duration_seconds histogram\n"
	"# UNIT http_server_request_duration_seconds seconds\n"
	"http_server_request_duration_seconds_bucket{http_request_method=\"GET\",le=\"0.1\"} 2\n"
	"http_server_request_duration_seconds_bucket{http_request_method=\"GET\",le=\"1.0\"} 3\n"
	"http_server_request_duration_seconds_bucket{http_request_method=\"GET\",le=\"+Inf\"} 4\n"
	"http_server_request_duration_seconds_sum{http_request_method=\"GET\"} 3.65\n"
	"http_server_request_duration_seconds_count{http_request_method=\"GET\"} 4\n"
	"# HELP cpu_utilization_ratio CPU.\n"
	"# TYPE cpu_utilization_ratio gauge\n"
	"# UNIT cpu_utilization_ratio ratio\n"
	"cpu_utilization_ratio 0.25\n"
	"# HELP rpc_latency_seconds Latency.\n"
	"# TYPE rpc_latency_seconds histogram\n"
	"# UNIT rpc_latency_seconds seconds\n"
	"rpc_latency_seconds_bucket{le=\"-2.8284271247461903\"} 1\n"
	"rpc_latency_seconds_bucket{le=\"0.0\"} 2\n"
	"rpc_latency_seconds_bucket{le=\"2.0\"} 3\n"
	"rpc_latency_seconds_bucket{le=\"2.8284271247461903\"} 3\n"
	"rpc_latency_seconds_bucket{le=\"4.0\"} 4\n"
	"rpc_latency_seconds_bucket{le=\"+Inf\"} 4\n"
	"# EOF\n";

TEST(prom_text_golden)
{
	struct mstore *st = sample_store();
	char *text = render(st, PROM_FMT_TEXT);
	char *om = render(st, PROM_FMT_OPENMETRICS);

	mstore__free(st);
	ASSERT_STREQ(text, golden_text);
	ASSERT_STREQ(om, golden_om);
	free(text);
	free(om);
}

static const char *fmt(double v, enum prom_format f)
{
	static char buf[48];

	prom_text__format_double(buf, sizeof(buf), v, f);
	return buf;
}

TEST(prom_text_number_format)
{
	/* strconv.FormatFloat(v, 'g', -1, 64) */
	ASSERT_STREQ(fmt(0, PROM_FMT_TEXT), "0");
	ASSERT_STREQ(fmt(1, PROM_FMT_TEXT), "1");
	ASSERT_STREQ(fmt(0.1, PROM_FMT_TEXT), "0.1");
	ASSERT_STREQ(fmt(0.005, PROM_FMT_TEXT), "0.005");
	ASSERT_STREQ(fmt(0.00001, PROM_FMT_TEXT), "1e-05");
	ASSERT_STREQ(fmt(123456, PROM_FMT_TEXT), "123456");
	ASSERT_STREQ(fmt(1234567, PROM_FMT_TEXT), "1.234567e+06");
	ASSERT_STREQ(fmt(1e6, PROM_FMT_TEXT), "1e+06");
	ASSERT_STREQ(fmt(-2.5, PROM_FMT_TEXT), "-2.5");
	ASSERT_STREQ(fmt(1.0 / 3, PROM_FMT_TEXT), "0.3333333333333333");
	ASSERT_STREQ(fmt(0.1 + 0.2, PROM_FMT_TEXT), "0.30000000000000004");
	ASSERT_STREQ(fmt(1.7976931348623157e308, PROM_FMT_TEXT),
		     "1.7976931348623157e+308");
	ASSERT_STREQ(fmt(5e-324, PROM_FMT_TEXT), "5e-324");
	ASSERT_STREQ(fmt(INFINITY, PROM_FMT_TEXT), "+Inf");
	ASSERT_STREQ(fmt(-INFINITY, PROM_FMT_TEXT), "-Inf");
	ASSERT_STREQ(fmt(NAN, PROM_FMT_TEXT), "NaN");
	ASSERT_STREQ(fmt(1, PROM_FMT_OPENMETRICS), "1.0");
	ASSERT_STREQ(fmt(0, PROM_FMT_OPENMETRICS), "0.0");
	ASSERT_STREQ(fmt(250, PROM_FMT_OPENMETRICS), "250.0");
	ASSERT_STREQ(fmt(1e6, PROM_FMT_OPENMETRICS), "1e+06");
	ASSERT_STREQ(fmt(0.25, PROM_FMT_OPENMETRICS), "0.25");
}

TEST(prom_text_negotiate)
{
	/* what Prometheus 2.x sends */
	ASSERT_EQ(prom_text__negotiate(
			  "application/openmetrics-text;version=1.0.0,"
			  "application/openmetrics-text;version=0.0.1;q=0.75,"
			  "text/plain;version=0.0.4;q=0.5,*/*;q=0.1"),
		  PROM_FMT_OPENMETRICS);
	ASSERT_EQ(prom_text__negotiate("text/plain;version=0.0.4"),
		  PROM_FMT_TEXT);
	ASSERT_EQ(prom_text__negotiate(NULL), PROM_FMT_TEXT);
	ASSERT_EQ(prom_text__negotiate("*/*"), PROM_FMT_TEXT);
	ASSERT_EQ(prom_text__negotiate(
			  "text/plain, application/openmetrics-text; q=0"),
		  PROM_FMT_TEXT);
	ASSERT_EQ(prom_text__negotiate(" Application/OpenMetrics-Text "),
		  PROM_FMT_OPENMETRICS);
	ASSERT_STREQ(prom_text__content_type(PROM_FMT_TEXT),
		     "text/plain; version=0.0.4; charset=utf-8");
}

TEST(prom_text_skips_colliding_families)
{
	struct mmetric_desc a = { .name = "x.y",
				  .description = "A.",
				  .instrument = MI_GAUGE };
	struct mmetric_desc b = { .name = "x_y",
				  .description = "B.",
				  .instrument = MI_GAUGE };
	struct mstore *st = mstore__new(NULL);
	int ia = mstore__add_metric(st, &a), ib = mstore__add_metric(st, &b);
	char *text;

	mstore__lock(st);
	mseries__set(mstore__series(st, ia, NULL, 0), 1, 1);
	mseries__set(mstore__series(st, ib, NULL, 0), 2, 1);
	mstore__unlock(st);
	text = render(st, PROM_FMT_TEXT);
	mstore__free(st);
	ASSERT_STREQ(text, "# HELP x_y A.\n# TYPE x_y gauge\nx_y 1\n");
	free(text);
}

/*
 * Output made to trip escaping and naming: label values with quotes,
 * backslashes, newlines, invalid UTF-8; keys that need sanitizing and that
 * collide; an exponential histogram with negative and zero buckets; an
 * explicit one; a ratio gauge; target_info.
 */
static int write_tricky(const char *path, enum prom_format fmt)
{
	struct mmetric_desc c = {
		.name = "gateway.requests",
		.description = "Requests \"q\"\\\n",
		.unit = "{request}",
		.instrument = MI_COUNTER,
	};
	struct mmetric_desc h = {
		.name = "gateway.request.duration",
		.description = "Latency.",
		.unit = "s",
		.instrument = MI_HISTOGRAM,
		.hist = MH_EXPONENTIAL,
	};
	struct mmetric_desc b = {
		.name = "gateway.request.size",
		.description = "Size.",
		.unit = "By",
		.instrument = MI_HISTOGRAM,
	};
	struct mmetric_desc t = {
		.name = "temperature",
		.description = "Temp.",
		.unit = "Cel",
		.instrument = MI_HISTOGRAM,
		.hist = MH_EXPONENTIAL,
	};
	struct mmetric_desc g = {
		.name = "cpu.utilization",
		.description = "CPU.",
		.unit = "1",
		.instrument = MI_GAUGE,
	};
	static const char *tricky[] = {
		"quote\"d",          "back\\slash",       "new\nline",
		"tab\tand \xc3\xa9", "bad utf8 \xff\xfe", "",
		"{}=,\"\\",          "trailing\\",
	};
	static const struct mlabel res[] = { { "service.name", "milometer" } };
	struct mstore *st = mstore__new(NULL);
	int ic = mstore__add_metric(st, &c), ih = mstore__add_metric(st, &h);
	int ib = mstore__add_metric(st, &b), it = mstore__add_metric(st, &t);
	int ig = mstore__add_metric(st, &g), err;
	struct mseries *s;
	size_t i;
	FILE *f;

	mstore__lock(st);
	for (i = 0; i < sizeof(tricky) / sizeof(tricky[0]); i++) {
		struct mlabel l[] = { { "http.route", tricky[i] },
				      { "9.bad-key", "v" },
				      { "a.b", "1" },
				      { "a_b", "2" } };
		int k;

		mseries__add(mstore__series(st, ic, l, 4), (double)i + 0.5, 1);
		s = mstore__series(st, ih, l, 4);
		for (k = 1; k <= 100; k++)
			mseries__observe(s, k * 0.001 * (i + 1), 1);
		mseries__observe(s, 0, 1);
		s = mstore__series(st, ib, l, 4);
		for (k = 1; k <= 100; k++)
			mseries__observe(s, k * 97.0, 1);
	}
	s = mstore__series(st, it, NULL, 0);
	mseries__observe(s, -3, 1);
	mseries__observe(s, 0, 1);
	mseries__observe(s, 25, 1);
	mseries__set(mstore__series(st, ig, NULL, 0), 0.5, 1);
	mstore__unlock(st);
	f = fopen(path, "w");
	if (!f) {
		mstore__free(st);
		return -1;
	}
	err = prom_text__write_target_info(f, res, 1, fmt);
	if (!err)
		err = prom_text__write(f, st, fmt, 2);
	fclose(f);
	mstore__free(st);
	return err;
}

/*
 * promtool is a project dependency (deploy/install-deps.sh): its absence is
 * a broken setup, so the test fails rather than skips.
 */
TEST(prom_text_promtool_accepts_tricky_output)
{
	char path[512], cmd[1100];
	int rc;

	snprintf(path, sizeof(path), "%s/metrics.prom", test__tmpdir());
	ASSERT_EQ(write_tricky(path, PROM_FMT_TEXT), 0);
	ASSERT_TRUE(system("command -v promtool >/dev/null") == 0,
		    "promtool not found: run deploy/install-deps.sh "
		    "(Debian package prometheus)");
	snprintf(cmd, sizeof(cmd), "promtool check metrics < %s >&2", path);
	rc = system(cmd);
	ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
		    "promtool rejected %s", path);
}

/*
 * promtool 2.42 has no OpenMetrics parser; the Python client's is strict
 * (family/sample naming, _sum/_count pairing, info families, # EOF). It is
 * not a project dependency, so this check says when it could not run.
 */
TEST(prom_text_openmetrics_parser_accepts_tricky_output)
{
	static const char py[] =
		"import sys\n"
		"from prometheus_client.openmetrics.parser import "
		"text_string_to_metric_families as p\n"
		"fams = list(p(open(sys.argv[1]).read()))\n"
		"assert len(fams) == 6, [f.name for f in fams]\n";
	char path[512], cmd[1400];
	int rc;

	if (system("/usr/bin/python3 -c 'import prometheus_client' "
		   "2>/dev/null"))
		SKIP("apt-get install python3-prometheus-client to validate "
		     "OpenMetrics output");
	snprintf(path, sizeof(path), "%s/metrics.om", test__tmpdir());
	ASSERT_EQ(write_tricky(path, PROM_FMT_OPENMETRICS), 0);
	snprintf(cmd, sizeof(cmd), "/usr/bin/python3 -c '%s' %s >&2", py, path);
	rc = system(cmd);
	ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
		    "OpenMetrics parser rejected %s", path);
}

TEST(prom_text_target_info)
{
	static const struct mlabel res[] = {
		{ "k8s.node.name", "node-1" },
		{ "service.name", "milometer" },
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_TRUE(f);
	ASSERT_EQ(prom_text__write_target_info(f, res, 2, PROM_FMT_TEXT), 0);
	ASSERT_EQ(prom_text__write_target_info(f, res, 2, PROM_FMT_OPENMETRICS),
		  0);
	ASSERT_EQ(prom_text__write_target_info(f, res, 0, PROM_FMT_TEXT), 0);
	fclose(f);
	ASSERT_STREQ(buf, "# HELP target_info Target metadata\n"
			  "# TYPE target_info gauge\n"
			  "target_info{k8s_node_name=\"node-1\","
			  "service_name=\"milometer\"} 1\n"
			  "# HELP target Target metadata\n"
			  "# TYPE target info\n"
			  "target_info{k8s_node_name=\"node-1\","
			  "service_name=\"milometer\"} 1\n");
	free(buf);
}

TEST(prom_text_const_labels_on_every_series)
{
	struct mmetric_desc c = {
		.name = "reqs",
		.description = "R.",
		.unit = "1",
		.instrument = MI_COUNTER,
		.is_int = true,
	};
	struct mlabel own[] = { { "k8s.cluster.id", "series-own" },
				{ "route", "a" } };
	struct mlabel consts[] = { { "k8s.cluster.id", "edge-1" },
				   { "k8s.clusterset.name", "set\"x" } };
	struct mstore *st = mstore__new(NULL);
	int id = mstore__add_metric(st, &c);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	mstore__lock(st);
	mseries__add(mstore__series(st, id, NULL, 0), 1, 1);
	mseries__add(mstore__series(st, id, own, 2), 2, 1);
	mstore__unlock(st);
	ASSERT_EQ(prom_text__write_labelled(f, st, PROM_FMT_TEXT, 2, consts, 2),
		  0);
	fclose(f);
	mstore__free(st);
	/* the series' own value wins; labels stay sorted and escaped */
	ASSERT_TRUE(
		strstr(buf,
		       "reqs_total{k8s_cluster_id=\"edge-1\",k8s_clusterset_name=\"set\\\"x\"} 1\n"),
		"%s", buf);
	ASSERT_TRUE(
		strstr(buf,
		       "reqs_total{k8s_cluster_id=\"series-own\",k8s_clusterset_name=\"set\\\"x\",route=\"a\"} 2\n"),
		"%s", buf);
	free(buf);
}
