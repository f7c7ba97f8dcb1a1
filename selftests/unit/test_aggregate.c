// SPDX-License-Identifier: Apache-2.0
/*
 * agent/pipeline/aggregate.c, the code the agent's ring-buffer drain runs: events
 * (struct mm_http_event as BPF writes them) over a route table compiled
 * from real manifests -> Envoy-named source series; the series and their
 * histogram buckets are checked against the latencies the test fed in,
 * computed here independently. Then what /metrics serves for such a store
 * (target_info, the cluster label, the source histograms, the contract's
 * target metrics from deploy/examples) must pass `promtool check metrics`
 * with no complaint at all.
 */
#include <stdlib.h>
#include <sys/wait.h>

#include "agent/pipeline/aggregate.h"
#include "bpf/milometer.h"
#include "policy/model/metric_store.h"
#include "exporter/prom_text.h"
#include "policy/contract/contract.h"
#include "policy/contract/policy_engine.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/source/manifest_source.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_route_data.h"

struct fixture {
	struct gw_model *m;
	struct route_table *t;
	struct mstore *st;
	struct aggregate *a;
};

static const struct route_table *one_table(void *ctx, uint32_t gen)
{
	struct route_table *t = ctx;

	return t && t->gen == gen ? t : NULL;
}

static bool fixture_open(struct fixture *x, bool sources, const char *dir,
			 const char *gateway)
{
	char err[512];

	x->m = gateway_api__new();
	x->st = mstore__new(NULL);
	if (!ASSERT_TRUE(x->m && x->st))
		return false;
	if (!ASSERT_EQ(gateway_api__load_dir(x->m, dir, err, sizeof(err)), 0) ||
	    !ASSERT_EQ(route_compile__build(x->m, gateway, 7, &x->t, err,
					    sizeof(err)),
		       0))
		return false;
	x->a = aggregate__new(x->st, one_table, x->t, sources);
	return ASSERT_TRUE(x->a != NULL);
}

static void fixture_close(struct fixture *x)
{
	aggregate__free(x->a);
	mstore__free(x->st);
	route_compile__free(x->t);
	gateway_api__free(x->m);
}

static int route_id(const struct route_table *t, const char *ns,
		    const char *name)
{
	for (size_t i = 0; i < t->nroutes; i++)
		if (!strcmp(t->routes[i].ns, ns) &&
		    !strcmp(t->routes[i].name, name))
			return (int)i;
	return -1;
}

static void exchange(struct aggregate *a, uint32_t gen, uint32_t route,
		     uint16_t rule, uint8_t leg, uint16_t status, double ms)
{
	struct mm_http_event e = {
		.type = MM_EVT_EXCHANGE,
		.leg = leg,
		.method = MM_M_GET,
		.status = status,
		.route_gen = gen,
		.route_id = route,
		.rule_idx = rule,
		.conn_id = 1,
		.start_ns = 1000000000ULL,
	};

	e.end_ns = e.start_ns + (uint64_t)(ms * 1e6);
	aggregate__event(a, &e, sizeof(e));
}

static char *render(struct mstore *st, bool target_info)
{
	static const struct mlabel res[] = {
		{ "service.name", "milometer" },
		{ "k8s.node.name", "node-1" },
		{ "host.name", "node-1.example" },
	};
	static const struct mlabel consts[] = {
		{ "k8s.cluster.uid", "7c1f2d4e-1111-5222-8333-944455556666" },
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int err = 0;

	if (!f)
		return NULL;
	if (target_info)
		err = prom_text__write_target_info(f, res, 3, PROM_FMT_TEXT);
	if (!err)
		err = prom_text__write_labelled(f, st, PROM_FMT_TEXT,
						2000000000ULL, consts, 1);
	fclose(f);
	if (err) {
		free(buf);
		return NULL;
	}
	return buf;
}

TEST(aggregate_source_series_match_events)
{
	/* Envoy's buckets are (prev, bound] in ms: 0.5 1 5 10 25 50 ... */
	static const double lat[] = { 0.2, 0.5, 0.7, 3, 3, 12, 49.9, 700 };
	struct fixture x = {};
	struct aggregate_stats as;
	char line[512], *text = NULL;
	double sum = 0;
	int login, api;

	if (!fixture_open(&x, true, route_testdata(), "infra/gw"))
		goto cleanup;
	login = route_id(x.t, "apps", "login");
	api = route_id(x.t, "apps", "api");
	if (!ASSERT_TRUE(login >= 0 && api >= 0))
		goto cleanup;
	mstore__lock(x.st);
	for (size_t i = 0; i < sizeof(lat) / sizeof(lat[0]); i++) {
		exchange(x.a, 7, login, 0, MM_LEG_DOWNSTREAM, 200, lat[i]);
		sum += lat[i];
	}
	exchange(x.a, 7, api, 1, MM_LEG_DOWNSTREAM, 503, 2);
	exchange(x.a, 7, api, 1, MM_LEG_UPSTREAM, 503, 1);
	exchange(x.a, 7, MM_ROUTE_UNMATCHED, 0, MM_LEG_DOWNSTREAM, 404, 1);
	/* a retired generation: counted as unknown, never as a route */
	exchange(x.a, 6, login, 0, MM_LEG_DOWNSTREAM, 200, 1);
	mstore__unlock(x.st);

	aggregate__stats(x.a, &as);
	ASSERT_EQ(as.events, 12);
	ASSERT_EQ(as.exchanges, 12);
	ASSERT_EQ(as.retired_gen, 1);

	text = render(x.st, false);
	if (!ASSERT_TRUE(text != NULL))
		goto cleanup;
	/* 8 login requests, 200, GET, downstream */
	ASSERT_TRUE(strstr(text, "envoy_http_downstream_rq_total{") != NULL);
	snprintf(line, sizeof(line),
		 "envoy_http_downstream_rq_time_count{"
		 "envoy_cluster_name=\"httproute/apps/login/rule/"
		 "0\",http_request_method=\"GET\","
		 "http_response_status_code=\"200\",http_response_status_code_"
		 "class=\"2xx\","
		 "k8s_cluster_uid=\"7c1f2d4e-1111-5222-8333-944455556666\","
		 "k8s_gateway_name=\"gw\",k8s_httproute_name=\"login\",k8s_"
		 "namespace_name=\"apps\"} 8\n");
	ASSERT_TRUE(strstr(text, line) != NULL, "no line\n%s\nin\n%s", line,
		    text);
	/* cumulative buckets: le=0.5 holds 0.2 and 0.5; le=1 adds 0.7 */
	ASSERT_TRUE(strstr(text, "le=\"0.5\"} 2\n") != NULL, "%s", text);
	ASSERT_TRUE(strstr(text, "le=\"1\"} 3\n") != NULL, "%s", text);
	ASSERT_TRUE(strstr(text, "le=\"5\"} 5\n") != NULL, "%s", text);
	ASSERT_TRUE(strstr(text, "le=\"25\"} 6\n") != NULL, "%s", text);
	ASSERT_TRUE(strstr(text, "le=\"50\"} 7\n") != NULL, "%s", text);
	ASSERT_TRUE(strstr(text, "le=\"1000\"} 8\n") != NULL, "%s", text);
	snprintf(line, sizeof(line), "k8s_namespace_name=\"apps\"} %g\n", sum);
	ASSERT_TRUE(strstr(text, line) != NULL, "sum %g\n%s", sum, text);
	/* the upstream leg of api rule 1, and the unmatched request */
	ASSERT_TRUE(strstr(text, "envoy_cluster_upstream_rq_total{") != NULL);
	ASSERT_TRUE(
		strstr(text,
		       "envoy_cluster_name=\"httproute/apps/api/rule/1\"") !=
		NULL);
	ASSERT_TRUE(strstr(text, "k8s_httproute_name=\"unmatched\"") != NULL);
	ASSERT_TRUE(strstr(text, "k8s_httproute_name=\"unknown\"") != NULL);
cleanup:
	free(text);
	fixture_close(&x);
}

TEST(aggregate_no_sources_no_series)
{
	struct fixture x = {};
	char *text = NULL;

	if (!fixture_open(&x, false, route_testdata(), "infra/gw"))
		goto cleanup;
	mstore__lock(x.st);
	exchange(x.a, 7, 0, 0, MM_LEG_DOWNSTREAM, 200, 1);
	mstore__unlock(x.st);
	text = render(x.st, false);
	ASSERT_TRUE(text && !strstr(text, "envoy_"), "%s", text ? text : "");
cleanup:
	free(text);
	fixture_close(&x);
}

/*
 * Everything /metrics serves for a realistic store: target_info, the
 * cluster label, Envoy's ms histograms, the contract's metrics bound by
 * the policy engine from deploy/examples. promtool (Debian's prometheus, a
 * project dependency) must print nothing and exit 0: no parse error and no
 * lint (in particular no "use base unit" on the ms source histograms).
 */
TEST(prom_text_promtool_full_exposition)
{
	const char *paths[] = {
		"deploy/examples/contract-gateway.yaml",
		"deploy/examples/contract-httproutes.yaml",
		"deploy/examples/contract-clusterproperties.yaml",
		"deploy/examples/contract",
		"selftests/unit/testdata/contract/seed-twins"
	};
	struct manifest_source *src = NULL;
	struct policy_engine *pe = NULL;
	struct contract *c = NULL;
	struct fixture x = {};
	char err[512], path[512], cmd[1200], *text = NULL;
	FILE *f;
	int rc;

	/* the contract's own Gateway and HTTPRoutes (demo/edge) */
	if (!fixture_open(&x, true, "deploy/examples", "demo/edge"))
		goto cleanup;
	src = manifest_source__open_paths(paths, 5, err, sizeof(err));
	if (!ASSERT_TRUE(src != NULL, "%s", err))
		goto cleanup;
	c = contract__new();
	if (!ASSERT_TRUE(c != NULL))
		goto cleanup;
	contract__load(c, src);
	pe = policy_engine__new(x.st, c);
	if (!ASSERT_TRUE(pe != NULL))
		goto cleanup;
	policy_engine__sync(pe, src);
	aggregate__set_engine(x.a, pe);
	mstore__lock(x.st);
	for (int i = 0; i < 50; i++) {
		exchange(x.a, 7, i % 3, 0, MM_LEG_DOWNSTREAM, i % 7 ? 200 : 503,
			 0.3 * i);
		exchange(x.a, 7, i % 3, 0, MM_LEG_UPSTREAM, i % 7 ? 200 : 503,
			 0.2 * i);
	}
	exchange(x.a, 7, MM_ROUTE_UNMATCHED, 0, MM_LEG_DOWNSTREAM, 404, 1);
	mstore__unlock(x.st);
	text = render(x.st, true);
	if (!ASSERT_TRUE(text != NULL))
		goto cleanup;
	ASSERT_TRUE(strstr(text, "envoy_cluster_upstream_rq_time_bucket{") !=
		    NULL);
	ASSERT_TRUE(strstr(text, "target_info{") != NULL);
	/* a target metric of the contract (seconds, from the seed policies) */
	ASSERT_TRUE(strstr(text,
			   "# TYPE gateway_networking_k8s_io_httproute") !=
			    NULL,
		    "no contract metric in\n%s", text);
	snprintf(path, sizeof(path), "%s/metrics.prom", test__tmpdir());
	f = fopen(path, "w");
	if (!ASSERT_TRUE(f != NULL))
		goto cleanup;
	fputs(text, f);
	fclose(f);
	if (!ASSERT_TRUE(system("command -v promtool >/dev/null") == 0,
			 "promtool not found: run deploy/install-deps.sh "
			 "(Debian package prometheus)"))
		goto cleanup;
	/* any output at all (a lint) is a failure, as is the exit status */
	snprintf(cmd, sizeof(cmd),
		 "out=$(promtool check metrics < %s 2>&1); rc=$?; "
		 "[ -z \"$out\" ] || echo \"$out\" >&2; "
		 "[ $rc -eq 0 ] && [ -z \"$out\" ]",
		 path);
	rc = system(cmd);
	ASSERT_TRUE(WIFEXITED(rc) && WEXITSTATUS(rc) == 0,
		    "promtool complains about %s", path);
	test_log("%zu bytes of exposition checked\n", strlen(text));
cleanup:
	free(text);
	policy_engine__free(pe);
	contract__free(c);
	manifest_source__free(src);
	fixture_close(&x);
}
