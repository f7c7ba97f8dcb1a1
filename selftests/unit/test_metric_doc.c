// SPDX-License-Identifier: Apache-2.0
/* The metrics reference table: Prometheus names, types, labels, escaping. */
#include <stdlib.h>

#include "exporter/metric_doc.h"
#include "selftests/unit/test.h"

TEST(metric_doc_section)
{
	static const struct metric_doc docs[] = {
		{ "milometer.series.active", "Series held.", "{series}",
		  MI_GAUGE, true },
		{ "envoy.http.downstream_rq_time", "Time | latency.", "ms",
		  MI_HISTOGRAM, false,
		  "k8s.httproute.name,http.response.status_code", "unless off",
		  "Note." },
		{ "milometer.events.dropped", "Lost.", "1", MI_COUNTER, true,
		  "reason" },
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!ASSERT_TRUE(f))
		return;
	ASSERT_EQ(metric_doc__write_section(f, "T", "Intro.", docs, 3), 0);
	fclose(f);
	ASSERT_STREQ(
		buf,
		"## T\n\nIntro.\n\n"
		"| Name | Type | Unit | Labels | Meaning |\n|---|---|---|---|---|\n"
		"| `milometer_series_active` | gauge | {series} | — | Series held. |\n"
		"| `envoy_http_downstream_rq_time` | histogram | ms | `k8s_httproute_name`, "
		"`http_response_status_code` | Time \\| latency. Note. Exposed unless off. |\n"
		"| `milometer_events_dropped_total` | counter | 1 | `reason` | Lost. |\n\n");
	free(buf);
}
