// SPDX-License-Identifier: Apache-2.0
/*
 * Bad input never disturbs good objects: malformed YAML, wrong shapes,
 * deep or huge documents. Plus `milometer check` output and exit codes,
 * the JSON view, condition counts and the derived uid.
 */
#include <sys/stat.h>

#include "agent/cmd/check.h"
#include "policy/contract/contract_uid.h"
#include "policy/source/doc.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

#define GOOD_DEF                                                               \
	"apiVersion: telemetry.miloapis.com/v1alpha1\n"                        \
	"kind: MetricDefinition\n"                                             \
	"metadata: {name: good}\n"                                             \
	"spec:\n"                                                              \
	"  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"    \
	"  metric:\n"                                                          \
	"    name: gateway.networking.k8s.io.httproute.good\n"                 \
	"    instrument: {type: Gauge, unit: \"1\"}\n"

TEST(contract_bad_yaml_next_to_good_objects)
{
	const char *dir = test__tmpdir();
	char *deep;
	size_t depth = 200, off = 0;
	struct tc_ctx t;
	bool saw_broken = false, saw_deep = false, saw_scalar = false,
	     saw_nokind = false;

	tc_write(dir, "00-good.yaml", GOOD_DEF);
	tc_write(dir, "10-broken.yaml",
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricDefinition\n"
		 "metadata: {name: broken\n"
		 "spec: [\n");
	tc_write(dir, "20-scalar.yaml", "just a string\n");
	tc_write(dir, "30-nokind.yaml",
		 "apiVersion: v1\nmetadata: {name: x}\n");
	tc_write(dir, "40-ignored.txt", "not: yaml: at: all: [");
	tc_write(dir, ".hidden.yaml", "[");
	deep = malloc(depth * 2 + 64);
	ASSERT_TRUE(deep);
	off += sprintf(deep, "apiVersion: v1\nkind: ConfigMap\ndata: ");
	for (size_t i = 0; i < depth; i++)
		deep[off++] = '[';
	for (size_t i = 0; i < depth; i++)
		deep[off++] = ']';
	deep[off++] = '\n';
	deep[off] = 0;
	tc_write(dir, "50-deep.yaml", deep);
	free(deep);

	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_status(&t, "MetricDefinition", "good", COND_ACCEPTED),
		     "True");
	for (size_t i = 0; i < manifest_source__nerrors(t.src); i++) {
		const char *e = manifest_source__error(t.src, i);

		test_log("%s\n", e);
		saw_broken |= strstr(e, "10-broken.yaml:") != NULL;
		saw_scalar |= strstr(e, "20-scalar.yaml:1:") != NULL;
		saw_nokind |= strstr(e, "30-nokind.yaml:1:") != NULL;
		saw_deep |= strstr(e, "50-deep.yaml:") != NULL;
		ASSERT_TRUE(!strstr(e, "hidden") && !strstr(e, ".txt"));
	}
	ASSERT_TRUE(saw_broken && saw_scalar && saw_nokind && saw_deep);
	ASSERT_EQ(manifest_source__nerrors(t.src), 4);
	ASSERT_EQ(contract__rejected(t.c), 4);
	tc_close(&t);
}

TEST(contract_huge_document_rejected_cleanly)
{
	const char *dir = test__tmpdir();
	static char chunk[1025];
	char path[512];
	struct tc_ctx t;
	FILE *f;

	tc_write(dir, "00-good.yaml", GOOD_DEF);
	snprintf(path, sizeof(path), "%s/99-huge.yaml", dir);
	f = fopen(path, "w");
	ASSERT_TRUE(f);
	fputs("apiVersion: v1\nkind: ConfigMap\ndata:\n  blob: \"", f);
	memset(chunk, 'x', sizeof(chunk) - 1);
	chunk[sizeof(chunk) - 1] = 0;
	for (int i = 0; i < (17 << 10); i++)
		fputs(chunk, f);
	fputs("\"\n", f);
	fclose(f);
	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_status(&t, "MetricDefinition", "good", COND_ACCEPTED),
		     "True");
	ASSERT_EQ(manifest_source__nerrors(t.src), 1);
	test_log("%s\n", manifest_source__error(t.src, 0));
	ASSERT_TRUE(strstr(manifest_source__error(t.src, 0), "99-huge.yaml"));
	tc_close(&t);
}

TEST(contract_wrong_types_everywhere)
{
	static const char *const specs[] = {
		"spec: []\n",
		/* "found nothing" had no file:line */
		"",
		"spec:\n  resource: {group: g.io, kind: A}\n",
		"spec: {resource: HTTPRoute}\n",
		"spec:\n  resource: {group: g.io, kind: A, resource: as}\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric: {name: 3}\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric:\n    name: g.io.a.x\n    instrument: {type: Gauge, unit: 1}\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric:\n    name: g.io.a.x\n    instrument: {type: Gauge, unit: \"1\"}\n  labels: {a: b}\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric:\n    name: g.io.a.x\n    instrument: {type: Gauge, unit: \"1\"}\n  labels: [{key: a, required: \"yes\"}]\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric:\n    name: g.io.a.x\n    instrument: {type: Gauge, unit: \"1\", aggregationTemporality: sometimes}\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric:\n    name: g.io.a.x\n    instrument: {type: Gauge, unit: \"1\"}\n    stability: GA\n",
		"spec:\n  resource: {group: g.io, kind: A}\n  metric:\n    name: g.io.a.x\n    instrument: {type: Gauge, unit: \"1\"}\n  labels: [{key: a}, {key: a}]\n",
	};
	const char *dir = test__tmpdir();

	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		char y[2048];
		struct tc_ctx t;

		snprintf(y, sizeof(y),
			 GOOD_DEF
			 "---\n"
			 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
			 "kind: MetricDefinition\n"
			 "metadata: {name: bad}\n%s",
			 specs[i]);
		ASSERT_EQ(tc_open1(&t, tc_write(dir, "x.yaml", y)), 0);
		test_log("%zu: %s %s\n", i,
			 tc_reason(&t, "MetricDefinition", "bad",
				   COND_ACCEPTED),
			 tc_message(&t, "MetricDefinition", "bad",
				    COND_ACCEPTED));
		ASSERT_STREQ(tc_status(&t, "MetricDefinition", "bad",
				       COND_ACCEPTED),
			     "False");
		ASSERT_TRUE(strstr(tc_message(&t, "MetricDefinition", "bad",
					      COND_ACCEPTED),
				   "x.yaml:"));
		ASSERT_STREQ(tc_status(&t, "MetricDefinition", "good",
				       COND_ACCEPTED),
			     "True");
		tc_close(&t);
	}
}

TEST(contract_list_kind_is_unwrapped)
{
	const char *dir = test__tmpdir();
	struct tc_ctx t;

	tc_write(
		dir, "list.yaml",
		"apiVersion: v1\n"
		"kind: List\n"
		"items:\n"
		"  - apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"    kind: MetricDefinition\n"
		"    metadata: {name: good}\n"
		"    spec:\n"
		"      resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"
		"      metric:\n"
		"        name: gateway.networking.k8s.io.httproute.good\n"
		"        instrument: {type: Gauge, unit: \"1\"}\n");
	ASSERT_EQ(tc_open1(&t, dir), 0);
	ASSERT_STREQ(tc_status(&t, "MetricDefinition", "good", COND_ACCEPTED),
		     "True");
	ASSERT_EQ(manifest_source__count(t.src), 1);
	tc_close(&t);
}

TEST(contract_check_exit_codes_and_output)
{
	const char *dir = test__tmpdir();
	char *out, *err, bad[512];
	int rc;

	rc = tc_check((const char *[]){ "--help" }, 1, &out, &err);
	ASSERT_EQ(rc, 0);
	ASSERT_TRUE(strstr(out, "--manifests"));
	free(out), free(err);

	rc = tc_check(NULL, 0, &out, &err);
	ASSERT_EQ(rc, 2);
	ASSERT_TRUE(strstr(err, "--manifests PATH is required"));
	free(out), free(err);

	rc = tc_check((const char *[]){ "--bogus" }, 1, &out, &err);
	ASSERT_EQ(rc, 2);
	free(out), free(err);

	rc = tc_check((const char *[]){ "-m", "/nonexistent/dir" }, 2, &out,
		      &err);
	ASSERT_EQ(rc, 2);
	ASSERT_TRUE(strstr(err, "/nonexistent/dir"), "%s", err);
	free(out), free(err);

	rc = tc_check((const char *[]){ "-m", dir, "extra" }, 3, &out, &err);
	ASSERT_EQ(rc, 2);
	free(out), free(err);

	/* the scenario examples with their routes: everything accepted */
	rc = tc_check(
		(const char *[]){
			"--manifests",
			SEED_DIR
			"/seed-scenario-upstream-request-count-metricdefinition.yaml",
			"--manifests",
			SEED_DIR
			"/seed-scenario-upstream-request-count-metricpolicy.yaml",
			"--manifests",
			SEED_DIR
			"/seed-scenario-condition-status-metricdefinition.yaml",
			"--manifests",
			SEED_DIR
			"/seed-scenario-condition-status-metricpolicy.yaml",
			"--manifests", ROUTES },
		10, &out, &err);
	ASSERT_EQ(rc, 0);
	ASSERT_TRUE(strstr(
		out, SEED_DIR
		"/seed-scenario-upstream-request-count-metricpolicy.yaml:1: MetricPolicy gateway-httproute-upstream-request-count-policy"));
	ASSERT_TRUE(strstr(
		out,
		"Programmed    True    Programmed             4 series from 2 HTTPRoute object(s)"));
	/* the two policies and definitions, and the two HTTPRoutes */
	ASSERT_TRUE(strstr(out, "6 object(s), 0 rejected, 0 manifest error(s)"),
		    "%s", out);
	free(out), free(err);

	/* one bad object: exit 1, the bad one named with file:line */
	snprintf(
		bad, sizeof(bad), "%s",
		tc_write(
			dir, "bad.yaml",
			"apiVersion: telemetry.miloapis.com/v1alpha1\n"
			"kind: MetricDefinition\n"
			"metadata: {name: bad}\n"
			"spec:\n"
			"  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"
			"  metric:\n"
			"    name: gateway.networking.k8s.io.httproute.bad\n"
			"    instrument: {type: Gauge, unit: \"furlongs\"}\n"));
	rc = tc_check((const char *[]){ "-m", dir }, 2, &out, &err);
	ASSERT_EQ(rc, 1);
	ASSERT_TRUE(strstr(out, "InvalidUnit"));
	ASSERT_TRUE(strstr(
		out, "bad.yaml:8: spec.metric.instrument.unit: \"furlongs\""));
	free(out), free(err);

	rc = tc_check((const char *[]){ "-m", dir, "--json" }, 3, &out, &err);
	ASSERT_EQ(rc, 1);
	{
		const char *want =
			"{\"objects\":[{\"kind\":\"MetricDefinition\",\"name\":\"bad\",\"file\":";

		ASSERT_TRUE(!strncmp(out, want, strlen(want)), "%s", out);
	}
	ASSERT_TRUE(strstr(out, "\"reason\":\"InvalidUnit\""));
	ASSERT_TRUE(strstr(out, "\\\"furlongs\\\""));
	ASSERT_TRUE(strstr(out, "\"rejected\":true"));
	free(out), free(err);

	/* a YAML error alone is also exit 1 */
	tc_write(dir, "bad.yaml", "a: [");
	rc = tc_check((const char *[]){ "-m", dir }, 2, &out, &err);
	ASSERT_EQ(rc, 1);
	ASSERT_TRUE(strstr(out, "error: "));
	free(out), free(err);
}

static void count_cb(void *ctx, const char *kind, const char *type,
		     const char *status, const char *reason, uint64_t n)
{
	char *buf = ctx;
	size_t len = strlen(buf);

	snprintf(buf + len, 4096 - len, "%s/%s/%s/%s=%llu;", kind, type, status,
		 reason, (unsigned long long)n);
}

TEST(contract_condition_counts_for_self_metrics)
{
	static char buf[4096];
	struct tc_ctx t;

	buf[0] = 0;
	ASSERT_EQ(tc_open_seed(&t), 0);
	contract__condition_counts(t.c, count_cb, buf);
	test_log("%s\n", buf);
	ASSERT_TRUE(strstr(
		buf, "MetricDefinition/Accepted/True/TelemetryRegistered=6;"));
	ASSERT_TRUE(strstr(
		buf, "MetricDefinition/Accepted/False/DuplicateMetric=1;"));
	ASSERT_TRUE(strstr(buf, "MetricPolicy/Accepted/False/Conflicted=2;"));
	ASSERT_TRUE(
		strstr(buf, "MetricPolicy/ResolvedRefs/True/ResolvedRefs=8;"));
	tc_close(&t);
}

TEST(contract_uid_is_uuid5)
{
	char uid[37], again[37];

	contract_uid__derive("gateway.networking.k8s.io/v1", "HTTPRoute",
			     "demo", "catalog", uid);
	/* python3: uuid.uuid5(UUID(CONTRACT_UID_NAMESPACE),
	 *   "gateway.networking.k8s.io/HTTPRoute/demo/catalog") */
	ASSERT_STREQ(uid, UID_CATALOG);
	contract_uid__derive("gateway.networking.k8s.io/v1beta1", "HTTPRoute",
			     "demo", "catalog", again);
	ASSERT_STREQ(uid, again); /* the version is not part of identity */
	contract_uid__derive("gateway.networking.k8s.io/v1", "HTTPRoute",
			     "other", "catalog", again);
	ASSERT_TRUE(strcmp(uid, again));
	ASSERT_EQ(uid[14], '5');
}

TEST(contract_same_file_listed_twice_read_once)
{
	const char *paths[] = { SEED_DIR, SEED_TWINS_DIR,
				SEED_TWINS_DIR
				"/seed-complete-metricdefinition.yaml",
				SEED_DIR "/" };
	struct tc_ctx t;

	ASSERT_EQ(tc_open(&t, paths, 4), 0);
	ASSERT_EQ(manifest_source__count(t.src), 15);
	ASSERT_EQ(contract__rejected(t.c), 3); /* the seed's twins only */
	tc_close(&t);
}

/*
 * attributeFilters regexes were copied into 1024 bytes, so a
 * long pattern was cut silently (here: cut before its syntax error).
 */
TEST(contract_attribute_filter_regex_not_cut)
{
	const char *dir = test__tmpdir();
	char *seed = NULL, *y, pat[1200];
	const char *at;
	size_t len = 0;
	FILE *f = fopen(SEED_TWINS_DIR
			"/seed-complete-metricpolicy-dataplane.yaml",
			"r");
	struct tc_ctx t;
	const char *paths[3];
	int n;

	ASSERT_TRUE(f != NULL);
	ASSERT_TRUE(getdelim(&seed, &len, 0, f) > 0);
	fclose(f);
	memset(pat, 'a', 1100);
	strcpy(pat + 1100, "(");
	at = strstr(seed, "      transform:");
	ASSERT_TRUE(at != NULL);
	n = asprintf(&y,
		     "%.*s          attributeFilters:\n"
		     "            - {key: k8s.gateway.name, regex: \"%s\"}\n%s",
		     (int)(at - seed), seed, pat, at);
	ASSERT_TRUE(n > 0);
	paths[0] = tc_write(dir, "p.yaml", y);
	paths[1] = SEED_TWINS_DIR "/seed-complete-metricdefinition.yaml";
	paths[2] = ROUTES;
	ASSERT_EQ(tc_open(&t, paths, 3), 0);
	ASSERT_STREQ(tc_status(&t, "MetricPolicy",
			       "httproute-upstream-latency-policy",
			       COND_ACCEPTED),
		     "False");
	ASSERT_TRUE(strstr(tc_message(&t, "MetricPolicy",
				      "httproute-upstream-latency-policy",
				      COND_ACCEPTED),
			   "missing )"),
		    "%s",
		    tc_message(&t, "MetricPolicy",
			       "httproute-upstream-latency-policy",
			       COND_ACCEPTED));
	tc_close(&t);
	free(seed);
	free(y);
}

/* what one object may hold is capped, inside a List too */
TEST(contract_object_node_cap)
{
	const char *dir = test__tmpdir();
	size_t n = DOC_MAX_OBJECT_NODES + 10, cap = 64 + n * 24, len = 0;
	char *y = malloc(cap);
	struct tc_ctx t;
	bool said = false;

	ASSERT_TRUE(y);
	len += snprintf(y + len, cap - len,
			"apiVersion: v1\nkind: List\nitems:\n"
			"- apiVersion: gateway.networking.k8s.io/v1\n"
			"  kind: HTTPRoute\n  metadata:\n    name: big\n"
			"    labels:\n");
	for (size_t i = 0; i < n; i++)
		len += snprintf(y + len, cap - len, "      k%zu: v\n", i);
	ASSERT_EQ(tc_open1(&t, tc_write(dir, "big.yaml", y)), 0);
	free(y);
	ASSERT_EQ(manifest_source__count(t.src), 0);
	for (size_t i = 0; i < manifest_source__nerrors(t.src); i++)
		said |= strstr(manifest_source__error(t.src, i),
			       "big.yaml:4:3: HTTPRoute holds more than 131072 YAML nodes") !=
			NULL;
	ASSERT_TRUE(said, "%s",
		    manifest_source__nerrors(t.src)
			    ? manifest_source__error(t.src, 0)
			    : "no error");
	tc_close(&t);
}
