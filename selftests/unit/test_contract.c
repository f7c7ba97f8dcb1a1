// SPDX-License-Identifier: Apache-2.0
/*
 * The metric contract: every seed example verbatim, the variants the seed
 * uses side by side, each rejection reason, tie-breaks and stability.
 */
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

#define MD "MetricDefinition"
#define MP "MetricPolicy"

static const char *const seed_defs[][2] = {
	{ "seed-complete-metricdefinition.yaml",
	  "gateway-httproute-delivery-upstream-request-latency" },
	{ "seed-scenario-condition-status-metricdefinition.yaml",
	  "gateway-httproute-condition-status" },
	{ "seed-scenario-upstream-request-count-metricdefinition.yaml",
	  "gateway-httproute-upstream-request-count" },
	{ "seed-scenario-upstream-latency-metricdefinition.yaml",
	  "gateway-httproute-upstream-latency" },
};

/* Each seed policy with a definition of its target. */
static const char *const seed_pols[][3] = {
	{ "seed-complete-metricpolicy-resourcefields.yaml",
	  "seed-scenario-condition-status-metricdefinition.yaml",
	  "httproute-condition-status-policy" },
	{ "seed-complete-metricpolicy-dataplane.yaml",
	  "seed-complete-metricdefinition.yaml",
	  "httproute-upstream-latency-policy" },
	{ "seed-complete-metricpolicy-dataplane.yaml",
	  "seed-scenario-upstream-latency-metricdefinition.yaml",
	  "httproute-upstream-latency-policy" },
	{ "seed-scenario-condition-status-metricpolicy.yaml",
	  "seed-scenario-condition-status-metricdefinition.yaml",
	  "gateway-httproute-condition-status-policy" },
	{ "seed-scenario-upstream-request-count-metricpolicy.yaml",
	  "seed-scenario-upstream-request-count-metricdefinition.yaml",
	  "gateway-httproute-upstream-request-count-policy" },
	{ "seed-scenario-upstream-latency-metricpolicy.yaml",
	  "seed-scenario-upstream-latency-metricdefinition.yaml",
	  "gateway-httproute-upstream-latency-policy" },
	{ "seed-scenario-upstream-latency-metricpolicy.yaml",
	  "seed-complete-metricdefinition.yaml",
	  "gateway-httproute-upstream-latency-policy" },
};

TEST(contract_seed_definitions_each_alone_accepted)
{
	for (size_t i = 0; i < sizeof(seed_defs) / sizeof(seed_defs[0]); i++) {
		char path[256];
		struct tc_ctx t;

		seed_path(path, sizeof(path), seed_defs[i][0]);
		ASSERT_EQ(tc_open1(&t, path), 0);
		ASSERT_STREQ(tc_status(&t, MD, seed_defs[i][1], COND_ACCEPTED),
			     "True");
		ASSERT_STREQ(tc_reason(&t, MD, seed_defs[i][1], COND_ACCEPTED),
			     "TelemetryRegistered");
		ASSERT_EQ(contract__rejected(t.c), 0);
		tc_close(&t);
	}
}

TEST(contract_seed_policies_each_with_its_definition_accepted)
{
	for (size_t i = 0; i < sizeof(seed_pols) / sizeof(seed_pols[0]); i++) {
		char p1[256], p2[256];
		const char *paths[] = { p1, p2 };
		struct tc_ctx t;

		seed_path(p1, sizeof(p1), seed_pols[i][0]);
		seed_path(p2, sizeof(p2), seed_pols[i][1]);
		ASSERT_EQ(tc_open(&t, paths, 2), 0);
		ASSERT_STREQ(tc_status(&t, MP, seed_pols[i][2], COND_ACCEPTED),
			     "True");
		ASSERT_STREQ(tc_status(&t, MP, seed_pols[i][2],
				       COND_RESOLVED_REFS),
			     "True");
		ASSERT_EQ(contract__rejected(t.c), 0);
		tc_close(&t);
	}
}

static void check_whole_seed(struct tc_ctx *t)
{
	/* the two same-named definitions: the older name wins */
	ASSERT_STREQ(
		tc_status(t, MD,
			  "gateway-httproute-delivery-upstream-request-latency",
			  COND_ACCEPTED),
		"True");
	ASSERT_STREQ(tc_reason(t, MD, "gateway-httproute-upstream-latency",
			       COND_ACCEPTED),
		     "DuplicateMetric");
	ASSERT_TRUE(
		strstr(tc_message(t, MD, "gateway-httproute-upstream-latency",
				  COND_ACCEPTED),
		       "gateway-httproute-delivery-upstream-request-latency"));
	/* complete and scenario policies feed the same targets */
	ASSERT_STREQ(tc_reason(t, MP, "httproute-upstream-latency-policy",
			       COND_ACCEPTED),
		     "Conflicted");
	ASSERT_STREQ(tc_reason(t, MP, "httproute-condition-status-policy",
			       COND_ACCEPTED),
		     "Conflicted");
	ASSERT_STREQ(tc_status(t, MP,
			       "gateway-httproute-upstream-latency-policy",
			       COND_ACCEPTED),
		     "True");
	ASSERT_STREQ(tc_status(t, MP,
			       "gateway-httproute-condition-status-policy",
			       COND_RESOLVED_REFS),
		     "True");
	ASSERT_STREQ(
		tc_status(t, MP,
			  "gateway-httproute-upstream-request-count-policy",
			  COND_ACCEPTED),
		"True");
	ASSERT_EQ(contract__rejected(t->c), 3);
}

TEST(contract_seed_all_together_deterministic)
{
	const char *dir = test__tmpdir();
	struct tc_ctx t;
	static const char *const files[] = {
		SEED_TWINS_DIR "/seed-complete-metricdefinition.yaml",
		SEED_TWINS_DIR "/seed-complete-metricpolicy-dataplane.yaml",
		SEED_TWINS_DIR
		"/seed-complete-metricpolicy-resourcefields.yaml",
		SEED_DIR
		"/seed-scenario-condition-status-metricdefinition.yaml",
		SEED_DIR "/seed-scenario-condition-status-metricpolicy.yaml",
		SEED_DIR
		"/seed-scenario-upstream-latency-metricdefinition.yaml",
		SEED_DIR "/seed-scenario-upstream-latency-metricpolicy.yaml",
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricdefinition.yaml",
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricpolicy.yaml",
	};

	ASSERT_EQ(tc_open_seed(&t), 0);
	check_whole_seed(&t);
	if (test__failed())
		return;
	tc_close(&t);
	/* reversed file order must not change who wins */
	for (size_t i = 0; i < 9; i++) {
		char from[256], name[64];

		snprintf(from, sizeof(from), "%s", files[i]);
		snprintf(name, sizeof(name), "%02zu.yaml", 9 - i);
		ASSERT_EQ(tc_copy(from, dir, name), 0);
	}
	ASSERT_EQ(tc_open1(&t, dir), 0);
	check_whole_seed(&t);
	tc_close(&t);
}

static const char *def_yaml(char *buf, size_t len, const char *obj,
			    const char *created, const char *metric,
			    const char *type, const char *unit,
			    const char *label)
{
	snprintf(buf, len,
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricDefinition\n"
		 "metadata:\n"
		 "  name: %s\n"
		 "%s%s%s"
		 "spec:\n"
		 "  resource:\n"
		 "    group: gateway.networking.k8s.io\n"
		 "    kind: HTTPRoute\n"
		 "  metric:\n"
		 "    name: %s\n"
		 "    description: test\n"
		 "    instrument:\n"
		 "      type: %s\n"
		 "      unit: \"%s\"\n"
		 "  labels:\n"
		 "    - key: %s\n"
		 "      required: true\n",
		 obj, created ? "  creationTimestamp: \"" : "",
		 created ? created : "", created ? "\"\n" : "", metric, type,
		 unit, label);
	return buf;
}

struct reject_case {
	const char *metric, *type, *unit, *label, *reason;
};

TEST(contract_definition_rejections)
{
	static const struct reject_case cases[] = {
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "resource_name", NULL },
		{ "Gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.httproute", "Counter", "1",
		  "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.gateway.requests", "Counter", "1",
		  "resource_name", "InvalidName" },
		{ "example.com.httproute.requests", "Counter", "1",
		  "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.httproute.Requests", "Counter",
		  "1", "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.httproute.req-total", "Counter",
		  "1", "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.httproute.requests.", "Counter",
		  "1", "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.httproute..requests", "Counter",
		  "1", "resource_name", "InvalidName" },
		{ "gateway.networking.k8s.io.httproute.requests", "Summary",
		  "1", "resource_name", "UnknownInstrument" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "secs", "resource_name", "InvalidUnit" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter", "",
		  "resource_name", "InvalidField" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "latency_seconds", "InvalidLabel" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "latency_ms", "InvalidLabel" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "body_bytes", "InvalidLabel" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "Resource", "InvalidLabel" },
		{ "gateway.networking.k8s.io.httproute.requests", "Counter",
		  "1", "http.response.status_code", NULL },
	};
	const char *dir = test__tmpdir();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct reject_case *rc = &cases[i];
		char y[2048], want[600];
		const char *path;
		struct tc_ctx t;

		path = tc_write(dir, "def.yaml",
				def_yaml(y, sizeof(y), "d", NULL, rc->metric,
					 rc->type, rc->unit, rc->label));
		ASSERT_EQ(tc_open1(&t, path), 0);
		test_log("%s %s %s %s -> %s: %s\n", rc->metric, rc->type,
			 rc->unit, rc->label,
			 tc_reason(&t, MD, "d", COND_ACCEPTED),
			 tc_message(&t, MD, "d", COND_ACCEPTED));
		ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED),
			     rc->reason ? "False" : "True");
		if (rc->reason) {
			ASSERT_STREQ(tc_reason(&t, MD, "d", COND_ACCEPTED),
				     rc->reason);
			/* the message names the file and the line */
			snprintf(want, sizeof(want), "%s:", path);
			ASSERT_TRUE(
				!strncmp(tc_message(&t, MD, "d", COND_ACCEPTED),
					 want, strlen(want)));
		}
		tc_close(&t);
	}
}

TEST(contract_units_and_instrument_spellings)
{
	static const char *const good[] = {
		"1",     "seconds", "s",         "ms",   "milliseconds",
		"bytes", "By",      "{request}", "By/s", "bytes/second",
		"%",     "percent", "KiBy",
	};
	static const char *const bad[] = {
		"",   "secs", "sec",         "Seconds", "b",  "{Request}",
		"{}", "1/x",  "bytes/bytes", "ms ",     "kb",
	};
	static const char *const types[] = {
		"Histogram",     "histogram", "HISTOGRAM",
		"counter",       "Counter",   "UpDownCounter",
		"updowncounter", "gauge",     "Gauge",
	};
	const char *dir = test__tmpdir();

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		ASSERT_TRUE(crd_definition__valid_unit(good[i]), "%s", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_TRUE(!crd_definition__valid_unit(bad[i]), "%s", bad[i]);
	ASSERT_STREQ(crd_definition__ucum("seconds"), "s");
	ASSERT_STREQ(crd_definition__ucum("bytes"), "By");
	ASSERT_STREQ(crd_definition__ucum("ms"), "ms");
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char y[2048];
		struct tc_ctx t;

		ASSERT_EQ(
			tc_open1(
				&t,
				tc_write(
					dir, "d.yaml",
					def_yaml(
						y, sizeof(y), "d", NULL,
						"gateway.networking.k8s.io.httproute.x",
						types[i], "seconds",
						"resource_name"))),
			0);
		ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED), "True");
		tc_close(&t);
	}
}

TEST(contract_label_unit_suffix_detection)
{
	ASSERT_TRUE(crd_definition__label_has_unit("duration_seconds"));
	ASSERT_TRUE(crd_definition__label_has_unit("x.latency_ms"));
	ASSERT_TRUE(crd_definition__label_has_unit("bytes"));
	ASSERT_TRUE(crd_definition__label_has_unit("size_kib"));
	ASSERT_TRUE(!crd_definition__label_has_unit("resource_name"));
	ASSERT_TRUE(!crd_definition__label_has_unit("terms"));
	ASSERT_TRUE(
		!crd_definition__label_has_unit("http.response.status_code"));
	ASSERT_TRUE(!crd_definition__label_has_unit("upstream_cluster"));
}

TEST(contract_duplicate_metric_oldest_wins_then_incumbent)
{
	const char *dir = test__tmpdir();
	char y[2048];
	struct tc_ctx t;

	/* "b" is older than "a": it wins although its name sorts later */
	tc_write(dir, "a.yaml",
		 def_yaml(y, sizeof(y), "a", "2025-02-01T00:00:00Z",
			  "gateway.networking.k8s.io.httproute.x", "Counter",
			  "1", "resource_name"));
	tc_write(dir, "b.yaml",
		 def_yaml(y, sizeof(y), "b", "2025-01-01T00:00:00Z",
			  "gateway.networking.k8s.io.httproute.x", "Counter",
			  "1", "resource_name"));
	/* no timestamp counts as newest */
	tc_write(dir, "c.yaml",
		 def_yaml(y, sizeof(y), "aa", NULL,
			  "gateway.networking.k8s.io.httproute.x", "Counter",
			  "1", "resource_name"));
	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_status(&t, MD, "b", COND_ACCEPTED), "True");
	ASSERT_STREQ(tc_reason(&t, MD, "a", COND_ACCEPTED), "DuplicateMetric");
	ASSERT_STREQ(tc_reason(&t, MD, "aa", COND_ACCEPTED), "DuplicateMetric");
	tc_close(&t);

	/* an accepted owner keeps its name when an older twin shows up */
	unlink(tc_write(dir, "b.yaml", ""));
	unlink(tc_write(dir, "c.yaml", ""));
	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_status(&t, MD, "a", COND_ACCEPTED), "True");
	tc_write(dir, "b.yaml",
		 def_yaml(y, sizeof(y), "b", "2025-01-01T00:00:00Z",
			  "gateway.networking.k8s.io.httproute.x", "Counter",
			  "1", "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_status(&t, MD, "a", COND_ACCEPTED), "True");
	ASSERT_STREQ(tc_reason(&t, MD, "b", COND_ACCEPTED), "DuplicateMetric");
	tc_close(&t);
}

TEST(contract_definition_is_stable_on_reload)
{
	const char *dir = test__tmpdir();
	const char *metric = "gateway.networking.k8s.io.httproute.x";
	struct metric_def *d;
	char y[2048];
	struct tc_ctx t;
	uint64_t gen;

	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Histogram",
			  "seconds", "resource_name"));
	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED), "True");
	gen = contract__generation(t.c);
	ASSERT_EQ(tc_reload(&t), 0); /* nothing changed: nothing to do */
	ASSERT_EQ(contract__generation(t.c), gen);

	/* unit change: rejected, the old version stays in effect */
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Histogram", "ms",
			  "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_reason(&t, MD, "d", COND_ACCEPTED),
		     "ImmutableFieldChanged");
	ASSERT_TRUE(strstr(tc_message(&t, MD, "d", COND_ACCEPTED), "unit"));
	d = contract__find_def(t.c, metric);
	ASSERT_TRUE(d);
	ASSERT_STREQ(d->unit, "seconds");
	crd_definition__put(d);

	/* instrument change, rename, dropped label: all rejected */
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Counter", "seconds",
			  "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_reason(&t, MD, "d", COND_ACCEPTED),
		     "ImmutableFieldChanged");
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL,
			  "gateway.networking.k8s.io.httproute.y", "Histogram",
			  "seconds", "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_reason(&t, MD, "d", COND_ACCEPTED),
		     "ImmutableFieldChanged");
	d = contract__find_def(t.c, "gateway.networking.k8s.io.httproute.y");
	ASSERT_TRUE(!d);
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Histogram",
			  "seconds", "other_label"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_reason(&t, MD, "d", COND_ACCEPTED),
		     "ImmutableFieldChanged");
	ASSERT_TRUE(strstr(tc_message(&t, MD, "d", COND_ACCEPTED),
			   "resource_name"));
	/* an invalid edit also keeps the accepted version */
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Histogram",
			  "fortnights", "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_reason(&t, MD, "d", COND_ACCEPTED), "InvalidUnit");
	d = contract__find_def(t.c, metric);
	ASSERT_TRUE(d);
	crd_definition__put(d);

	/* going back to the accepted spec is fine */
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Histogram",
			  "seconds", "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED), "True");

	/* deleting frees the name; a new definition may then differ */
	unlink(tc_write(dir, "d.yaml", ""));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_TRUE(!contract__find_def(t.c, metric));
	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Counter", "1",
			  "resource_name"));
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED), "True");
	tc_close(&t);
}

TEST(contract_label_added_is_compatible)
{
	const char *dir = test__tmpdir();
	const char *metric = "gateway.networking.k8s.io.httproute.x";
	struct metric_def *d;
	char y[2048];
	struct tc_ctx t;

	tc_write(dir, "d.yaml",
		 def_yaml(y, sizeof(y), "d", NULL, metric, "Counter", "1",
			  "resource_name"));
	ASSERT_EQ(tc_open1(&t, dir), 0);
	strcat(y, "    - key: extra\n");
	tc_write(dir, "d.yaml", y);
	ASSERT_EQ(tc_reload(&t), 1);
	ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED), "True");
	d = contract__find_def(t.c, metric);
	ASSERT_TRUE(d && d->nlabels == 2);
	crd_definition__put(d);
	tc_close(&t);
}

TEST(contract_subject_and_resource_variants)
{
	/* spec.resource with kind or resource; subject in three shapes */
	static const char *const resources[] = {
		"    group: gateway.networking.k8s.io\n    kind: HTTPRoute\n",
		"    group: gateway.networking.k8s.io\n    resource: HTTPRoute\n",
		"    group: gateway.networking.k8s.io\n    resource: httproutes\n",
	};
	static const char *const subjects[] = {
		"    group: gateway.networking.k8s.io\n    version: v1\n    kind: HTTPRoute\n",
		"    group: gateway.networking.k8s.io\n    version: v1\n    resource: HTTPRoute\n",
		"    apiGroup: gateway.networking.k8s.io\n    resource: httproutes\n    scope: Namespaced\n",
	};
	const char *dir = test__tmpdir();

	for (size_t r = 0; r < 3; r++) {
		for (size_t s = 0; s < 3; s++) {
			char y[4096];
			struct tc_ctx t;

			snprintf(
				y, sizeof(y),
				"apiVersion: telemetry.miloapis.com/v1alpha1\n"
				"kind: MetricDefinition\n"
				"metadata: {name: d}\n"
				"spec:\n"
				"  resource:\n%s"
				"  metric:\n"
				"    name: gateway.networking.k8s.io.httproute.requests\n"
				"    instrument: {type: counter, unit: \"1\", aggregationTemporality: delta}\n"
				"  labels:\n"
				"    - {key: resource_name, required: true}\n"
				"---\n"
				"apiVersion: telemetry.miloapis.com/v1alpha1\n"
				"kind: MetricPolicy\n"
				"metadata: {name: p}\n"
				"spec:\n"
				"  subject:\n%s"
				"  targetMetric: {name: gateway.networking.k8s.io.httproute.requests}\n"
				"  source:\n"
				"    type: DataPlane\n"
				"    dataPlane:\n"
				"      selector:\n"
				"        otel:\n"
				"          metricName: envoy.http.downstream_rq_total\n"
				"          attributeSelectors:\n"
				"            - {key: k8s.httproute.name, valueFrom: resource.metadata.name}\n"
				"      transform:\n"
				"        labels: {resource_name: resource.metadata.name}\n",
				resources[r], subjects[s]);
			ASSERT_EQ(tc_open1(&t, tc_write(dir, "x.yaml", y)), 0);
			ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED),
				     "True");
			ASSERT_STREQ(tc_status(&t, MP, "p", COND_ACCEPTED),
				     "True");
			ASSERT_STREQ(tc_status(&t, MP, "p", COND_RESOLVED_REFS),
				     "True");
			tc_close(&t);
		}
	}
}

/* A valid definition plus one policy whose spec body varies. */
static const char *pol_yaml(char *buf, size_t len, const char *source)
{
	snprintf(
		buf, len,
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricDefinition\n"
		"metadata: {name: d}\n"
		"spec:\n"
		"  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"
		"  metric:\n"
		"    name: gateway.networking.k8s.io.httproute.status.condition\n"
		"    instrument: {type: Gauge, unit: \"1\"}\n"
		"  labels:\n"
		"    - {key: resource_name, required: true}\n"
		"    - {key: condition, required: true}\n"
		"    - {key: reason}\n"
		"---\n"
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricPolicy\n"
		"metadata: {name: p}\n"
		"spec:\n"
		"  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}\n"
		"  targetMetric: {name: gateway.networking.k8s.io.httproute.status.condition}\n"
		"  source:\n"
		"    type: ResourceFields\n"
		"    resourceFields:\n"
		"%s",
		source);
	return buf;
}

struct pol_case {
	const char *body;
	const char *type, *status, *reason, *needle;
};

TEST(contract_policy_rejections)
{
	static const struct pol_case cases[] = {
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"item.status == 'True' ? 1 : 0\"}\n"
		  "        labels: {resource_name: resource.metadata.name, condition: item.type}\n",
		  COND_ACCEPTED, "True", "Accepted", NULL },
		/* InvalidCEL: expression, column and message */
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"item.status == 'True' ? 1 :\"}\n"
		  "        labels: {resource_name: resource.metadata.name, condition: item.type}\n",
		  COND_ACCEPTED, "False", "InvalidCEL",
		  /* the reason first (messages are bounded) */
		  "seriesFrom.value.cel: column 28: unexpected token end of "
		  "expression; in `item.status == 'True' ? 1 :`" },
		/* a variable the field may not use */
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"value\"}\n"
		  "        labels: {resource_name: resource.metadata.name, condition: item.type}\n",
		  COND_ACCEPTED, "False", "InvalidCEL", "`value`" },
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"1\"}\n"
		  "        labels: {resource_name: resource.metadata.name, condition: item.type, extra: item.type}\n",
		  COND_ACCEPTED, "False", "LabelSchemaMismatch", "\"extra\"" },
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"1\"}\n"
		  "        labels: {resource_name: resource.metadata.name}\n",
		  COND_ACCEPTED, "False", "LabelSchemaMismatch",
		  "\"condition\"" },
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"1\"}\n"
		  "        labels: {resource_name: resource.metadata.name}\n"
		  "      staticLabels: {condition: Ready}\n",
		  COND_ACCEPTED, "True", "Accepted", NULL },
		{ "      seriesFrom:\n"
		  "        path: status.conditions\n"
		  "        value: {cel: \"1\"}\n",
		  COND_ACCEPTED, "False", "InvalidField", "seriesFrom.path" },
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"1\"}\n"
		  "        lables: {}\n",
		  COND_ACCEPTED, "False", "UnknownField", "\"lables\"" },
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: 1}\n",
		  COND_ACCEPTED, "False", "InvalidField", "value.cel" },
		{ "      seriesFrom:\n"
		  "        path: resource.status.conditions\n"
		  "        value: {cel: \"1\"}\n"
		  "        labels: {resource_name: resource.metadata.name, condition: item.type}\n"
		  "      staticLabels: {reason: 3}\n",
		  COND_ACCEPTED, "False", "InvalidField", "quote it" },
		{ "      seriesFrom: [1, 2]\n", COND_ACCEPTED, "False",
		  "InvalidField", "expected an object" },
	};
	const char *dir = test__tmpdir();

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct pol_case *pc = &cases[i];
		char y[4096];
		const char *msg;
		struct tc_ctx t;

		ASSERT_EQ(tc_open1(&t,
				   tc_write(dir, "p.yaml",
					    pol_yaml(y, sizeof(y), pc->body))),
			  0);
		msg = tc_message(&t, MP, "p", pc->type);
		test_log("case %zu: %s %s: %s\n", i,
			 tc_status(&t, MP, "p", pc->type),
			 tc_reason(&t, MP, "p", pc->type), msg);
		ASSERT_STREQ(tc_status(&t, MP, "p", pc->type), pc->status);
		ASSERT_STREQ(tc_reason(&t, MP, "p", pc->type), pc->reason);
		if (pc->needle)
			ASSERT_TRUE(strstr(msg, pc->needle), "%s", msg);
		if (!strcmp(pc->status, "False"))
			ASSERT_TRUE(strstr(msg, "p.yaml:"), "%s", msg);
		/* the definition next to it is never disturbed */
		ASSERT_STREQ(tc_status(&t, MD, "d", COND_ACCEPTED), "True");
		tc_close(&t);
	}
}

TEST(contract_policy_refs)
{
	const char *dir = test__tmpdir();
	char y[4096], *p;
	struct tc_ctx t;

	pol_yaml(
		y, sizeof(y),
		"      seriesFrom:\n"
		"        path: resource.status.conditions\n"
		"        value: {cel: \"1\"}\n"
		"        labels: {resource_name: resource.metadata.name, condition: item.type}\n");
	/* point the policy at a metric nobody defines */
	p = strstr(
		y,
		"targetMetric: {name: gateway.networking.k8s.io.httproute.status.condition}");
	ASSERT_TRUE(p);
	memcpy(strstr(p, "condition}"), "conditioX}", 10);
	ASSERT_EQ(tc_open1(&t, tc_write(dir, "p.yaml", y)), 0);
	ASSERT_STREQ(tc_status(&t, MP, "p", COND_ACCEPTED), "True");
	ASSERT_STREQ(tc_reason(&t, MP, "p", COND_RESOLVED_REFS),
		     "TargetNotFound");
	ASSERT_STREQ(tc_reason(&t, MP, "p", COND_PROGRAMMED), "NotAccepted");
	ASSERT_EQ(contract__rejected(t.c), 1);
	tc_close(&t);

	/* a subject of another kind than the definition's resource */
	pol_yaml(
		y, sizeof(y),
		"      seriesFrom:\n"
		"        path: resource.status.conditions\n"
		"        value: {cel: \"1\"}\n"
		"        labels: {resource_name: resource.metadata.name, condition: item.type}\n");
	p = strstr(y, "version: v1, kind: HTTPRoute");
	memcpy(p + strlen("version: v1, kind: "), "GRPCRoute", 9);
	ASSERT_EQ(tc_open1(&t, tc_write(dir, "p.yaml", y)), 0);
	ASSERT_STREQ(tc_reason(&t, MP, "p", COND_RESOLVED_REFS),
		     "SubjectMismatch");
	tc_close(&t);
}

TEST(contract_dataplane_policy_fields)
{
	const char *dir = test__tmpdir();
	struct tc_ctx t;
	static const char *y =
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricPolicy\n"
		"metadata: {name: p}\n"
		"spec:\n"
		"  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}\n"
		"  targetMetric: {name: x}\n"
		"  source:\n"
		"    type: DataPlane\n"
		"    resourceFields: {}\n"
		"    dataPlane:\n"
		"      selector: {otel: {metricName: a}}\n";

	ASSERT_EQ(tc_open1(&t, tc_write(dir, "p.yaml", y)), 0);
	ASSERT_STREQ(tc_reason(&t, MP, "p", COND_ACCEPTED), "InvalidField");
	ASSERT_TRUE(strstr(tc_message(&t, MP, "p", COND_ACCEPTED),
			   "remove resourceFields"));
	tc_close(&t);

	/* no attributeSelectors: samples could not be attributed */
	ASSERT_EQ(
		tc_open1(
			&t,
			tc_write(dir, "p.yaml",
				 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
				 "kind: MetricPolicy\n"
				 "metadata: {name: p}\n"
				 "spec:\n"
				 "  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}\n"
				 "  targetMetric: {name: x}\n"
				 "  source:\n"
				 "    type: DataPlane\n"
				 "    dataPlane:\n"
				 "      selector: {otel: {metricName: a}}\n")),
		0);
	ASSERT_STREQ(tc_reason(&t, MP, "p", COND_ACCEPTED), "InvalidField");
	ASSERT_TRUE(
		strstr(tc_message(&t, MP, "p", COND_ACCEPTED),
		       "p.yaml:10: spec.source.dataPlane.selector.otel.attributeSelectors: at least one"),
		"%s", tc_message(&t, MP, "p", COND_ACCEPTED));
	tc_close(&t);
}

TEST(contract_object_level_rejections)
{
	const char *dir = test__tmpdir();
	struct tc_ctx t;

	tc_write(dir, "a.yaml",
		 "apiVersion: telemetry.miloapis.com/v1beta9\n"
		 "kind: MetricDefinition\n"
		 "metadata: {name: old}\n"
		 "spec: {}\n"
		 "---\n"
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricThing\n"
		 "metadata: {name: thing}\n"
		 "spec: {}\n"
		 "---\n"
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricDefinition\n"
		 "metadata: {name: Bad_Name}\n"
		 "spec: {}\n"
		 "---\n"
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricDefinition\n"
		 "metadata: {name: extra, color: blue}\n"
		 "spec: {}\n"
		 "---\n"
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricDefinition\n"
		 "metadata: {name: nospec}\n");
	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_reason(&t, MD, "old", COND_ACCEPTED),
		     "UnsupportedVersion");
	ASSERT_STREQ(tc_reason(&t, "MetricThing", "thing", COND_ACCEPTED),
		     "UnknownKind");
	ASSERT_STREQ(tc_reason(&t, MD, "Bad_Name", COND_ACCEPTED),
		     "InvalidField");
	ASSERT_STREQ(tc_reason(&t, MD, "extra", COND_ACCEPTED), "UnknownField");
	ASSERT_STREQ(tc_reason(&t, MD, "nospec", COND_ACCEPTED),
		     "InvalidField");
	ASSERT_TRUE(strstr(tc_message(&t, MD, "nospec", COND_ACCEPTED),
			   "a.yaml:21:"),
		    "%s", tc_message(&t, MD, "nospec", COND_ACCEPTED));
	ASSERT_EQ(contract__rejected(t.c), 5);
	tc_close(&t);
}

TEST(contract_duplicate_object_name)
{
	const char *dir = test__tmpdir();
	struct metric_def *d;
	char y[2048];
	struct tc_ctx t;

	tc_write(dir, "1.yaml",
		 def_yaml(y, sizeof(y), "d", NULL,
			  "gateway.networking.k8s.io.httproute.x", "Counter",
			  "1", "resource_name"));
	tc_write(dir, "2.yaml",
		 def_yaml(y, sizeof(y), "d", NULL,
			  "gateway.networking.k8s.io.httproute.y", "Counter",
			  "1", "resource_name"));
	ASSERT_EQ(tc_open1(&t, dir), 0);
	/* the first is accepted; the second object gets the duplicate */
	d = contract__find_def(t.c, "gateway.networking.k8s.io.httproute.x");
	ASSERT_TRUE(d != NULL);
	crd_definition__put(d);
	ASSERT_EQ(contract__rejected(t.c), 1);
	tc_close(&t);
}
