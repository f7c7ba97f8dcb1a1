// SPDX-License-Identifier: Apache-2.0
/* OTel -> Prometheus name translation and escaping. */
#include <errno.h>
#include <stdlib.h>

#include "exporter/prom_names.h"
#include "selftests/unit/test.h"

static const char *metric(const char *name, const char *unit,
			  enum minstrument inst)
{
	static char buf[256];
	struct mmetric_desc d = { .name = name,
				  .unit = unit,
				  .instrument = inst };

	if (prom_names__metric(&d, buf, sizeof(buf)) < 0)
		return "(error)";
	return buf;
}

TEST(prom_names_metric)
{
	ASSERT_STREQ(metric("http.server.request.duration", "s", MI_HISTOGRAM),
		     "http_server_request_duration_seconds");
	ASSERT_STREQ(metric("http.server.requests", "{request}", MI_COUNTER),
		     "http_server_requests_total");
	/* scaled units keep the source's name, as Envoy's exposition */
	ASSERT_STREQ(metric("rpc.duration", "ms", MI_HISTOGRAM),
		     "rpc_duration");
	ASSERT_STREQ(metric("envoy.cluster.upstream_rq_time", "ms",
			    MI_HISTOGRAM),
		     "envoy_cluster_upstream_rq_time");
	ASSERT_STREQ(metric("uptime", "min", MI_COUNTER), "uptime_total");
	ASSERT_STREQ(metric("heap", "KiBy", MI_GAUGE), "heap");
	ASSERT_STREQ(metric("rate", "ms/s", MI_GAUGE), "rate");
	ASSERT_STREQ(metric("net.io", "By", MI_COUNTER), "net_io_bytes_total");
	ASSERT_STREQ(metric("net.io.bytes", "By", MI_COUNTER),
		     "net_io_bytes_total");
	ASSERT_STREQ(metric("jobs_total", "s", MI_COUNTER),
		     "jobs_seconds_total");
	ASSERT_STREQ(metric("jobs_total", "", MI_COUNTER), "jobs_total");
	ASSERT_STREQ(metric("queue.total", "", MI_GAUGE), "queue_total");
	ASSERT_STREQ(metric("mem.utilization", "1", MI_GAUGE),
		     "mem_utilization_ratio");
	ASSERT_STREQ(metric("mem.utilization_ratio", "1", MI_GAUGE),
		     "mem_utilization_ratio");
	ASSERT_STREQ(metric("hits", "1", MI_COUNTER), "hits_total");
	ASSERT_STREQ(metric("inflight", "1", MI_UPDOWN), "inflight");
	ASSERT_STREQ(metric("a..b--c", "", MI_GAUGE), "a_b_c");
	ASSERT_STREQ(metric("9lives", "", MI_GAUGE), "_9lives");
	ASSERT_STREQ(metric("ns:sub.metric", "", MI_GAUGE), "ns:sub_metric");
	ASSERT_STREQ(metric("throughput", "By/s", MI_GAUGE),
		     "throughput_bytes_per_second");
	ASSERT_STREQ(metric("pkts", "{packet}/s", MI_GAUGE), "pkts_per_second");
	ASSERT_STREQ(metric("temp", "Cel", MI_GAUGE), "temp_celsius");
	ASSERT_STREQ(metric("lat", "seconds", MI_HISTOGRAM), "lat_seconds");
	ASSERT_STREQ(metric("x.seconds.max", "s", MI_GAUGE), "x_seconds_max");
}

TEST(prom_names_unit_and_label)
{
	char b[64];

	ASSERT_EQ(prom_names__unit("{request}", MI_COUNTER, b, sizeof(b)), 0);
	ASSERT_EQ(prom_names__unit("us", MI_GAUGE, b, sizeof(b)), 12);
	ASSERT_STREQ(b, "microseconds");
	ASSERT_EQ(prom_names__unit(NULL, MI_GAUGE, b, sizeof(b)), 0);
	ASSERT_EQ(prom_names__label("http.route", b, sizeof(b)), 10);
	ASSERT_STREQ(b, "http_route");
	prom_names__label("k8s.pod.name", b, sizeof(b));
	ASSERT_STREQ(b, "k8s_pod_name");
	prom_names__label("2xx", b, sizeof(b));
	ASSERT_STREQ(b, "_2xx");
	prom_names__label("__name__", b, sizeof(b));
	ASSERT_STREQ(b, "_name_");
	prom_names__label("a:b", b, sizeof(b));
	ASSERT_STREQ(b, "a_b");
	ASSERT_EQ(prom_names__label("abcdef", b, 4), -ENOSPC);
}

TEST(prom_names_escaping)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ASSERT_TRUE(f);
	prom_names__write_escaped(f, "a\"b\\c\nd\xff\xc3\xa9", true);
	fputc('|', f);
	prom_names__write_escaped(f, "a\"b\\c\nd", false);
	fclose(f);
	ASSERT_STREQ(buf, "a\\\"b\\\\c\\nd\xef\xbf\xbd\xc3\xa9|a\"b\\\\c\\nd");
	free(buf);
}
