// SPDX-License-Identifier: Apache-2.0
/*
 * The policy engine against the real metric store: source series created
 * the way the agent creates them, the seed's three data-plane examples and
 * its resource-fields examples, value semantics, errors and invalidation.
 */
#include <pthread.h>
#include <time.h>

#include "policy/model/metric_store.h"
#include "policy/contract/contract_reload.h"
#include "policy/contract/contract_uid.h"
#include "policy/source/doc.h"
#include "policy/contract/policy_engine.h"
#include "policy/source/source_catalogue.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

#define COUNT_METRIC                                                           \
	"gateway.networking.k8s.io.httproute.delivery.upstream_request.count"
#define LAT_METRIC                                                             \
	"gateway.networking.k8s.io.httproute.delivery.upstream_request.latency"
#define COND_METRIC  "gateway.networking.k8s.io.httproute.status.condition"
#define UID_CHECKOUT "3c0f5f7e-8d1a-4b8e-9a51-2f4f0f1f9a01"
#define NOW          1750000000000000000ull

struct pe_ctx {
	struct tc_ctx t;
	struct mstore *s;
	struct policy_engine *e;
};

static int pe_open(struct pe_ctx *x, const char *const *paths, size_t n)
{
	int err = tc_open(&x->t, paths, n);

	if (err)
		return err;
	/* keep_delta: an OTLP reader's delta view next to Prometheus' */
	x->s = mstore__new(&(struct mstore_opts){ .keep_delta = true });
	x->e = policy_engine__new(x->s, x->t.c);
	if (!x->s || !x->e)
		return -ENOMEM;
	return policy_engine__sync(x->e, x->t.src) == 1 ? 0 : -EINVAL;
}

static void pe_close(struct pe_ctx *x)
{
	policy_engine__free(x->e);
	mstore__free(x->s);
	tc_close(&x->t);
}

/* ---- capture one metric from a collection ---- */

struct cap_point {
	char keys[16][64];
	char vals[16][128];
	size_t nl;
	double value;
	uint64_t count;
	double sum, min, max;
	double bound0;
	size_t nbounds;
	double bounds[32];
	uint64_t counts[33];
};

struct capture {
	const char *metric;
	bool found;
	char unit[32];
	enum minstrument ins;
	enum mtemporality temp;
	struct cap_point pts[32];
	size_t n;
};

static int cap_fn(void *ctx, const struct mmetric_desc *d,
		  const struct mpoint_view *p, size_t n)
{
	struct capture *c = ctx;

	if (strcmp(d->name, c->metric))
		return 0;
	c->found = true;
	snprintf(c->unit, sizeof(c->unit), "%s", d->unit);
	c->ins = d->instrument;
	c->temp = d->temporality;
	for (size_t i = 0; i < n && c->n < 32; i++) {
		struct cap_point *cp = &c->pts[c->n++];

		memset(cp, 0, sizeof(*cp));
		for (size_t j = 0; j < p[i].nlabels && j < 16; j++) {
			snprintf(cp->keys[j], 64, "%s", p[i].labels[j].key);
			snprintf(cp->vals[j], 128, "%s", p[i].labels[j].value);
			cp->nl++;
		}
		cp->value = p[i].value;
		cp->count = p[i].count;
		cp->sum = p[i].sum;
		cp->min = p[i].min;
		cp->max = p[i].max;
		if (p[i].explicit_h && p[i].explicit_h->nbounds) {
			cp->bound0 = p[i].explicit_h->bounds[0];
			cp->nbounds = p[i].explicit_h->nbounds < 32
					      ? p[i].explicit_h->nbounds
					      : 32;
			memcpy(cp->bounds, p[i].explicit_h->bounds,
			       cp->nbounds * sizeof(double));
			memcpy(cp->counts, p[i].explicit_h->counts,
			       (cp->nbounds + 1) * sizeof(uint64_t));
		}
	}
	return 0;
}

static void capture_view(struct mstore *s, const char *metric,
			 enum mtemporality view, struct capture *c)
{
	memset(c, 0, sizeof(*c));
	c->metric = metric;
	mstore__collect(s, view, NOW + 1, cap_fn, c);
}

static void capture(struct mstore *s, const char *metric, struct capture *c)
{
	capture_view(s, metric, MT_CUMULATIVE, c);
}

static const char *lbl(const struct cap_point *p, const char *key)
{
	for (size_t i = 0; i < p->nl; i++)
		if (!strcmp(p->keys[i], key))
			return p->vals[i];
	return NULL;
}

/* The point whose labels include k1=v1 (and k2=v2 when k2). */
static const struct cap_point *find_pt(const struct capture *c, const char *k1,
				       const char *v1, const char *k2,
				       const char *v2)
{
	for (size_t i = 0; i < c->n; i++) {
		const char *a = lbl(&c->pts[i], k1);
		const char *b = k2 ? lbl(&c->pts[i], k2) : NULL;

		if (a && !strcmp(a, v1) && (!k2 || (b && !strcmp(b, v2))))
			return &c->pts[i];
	}
	return NULL;
}

/* The attributes the agent's data path puts on a source series. */
#define ROUTE_ATTRS(route, rule, klass, code)                                  \
	{                                                                      \
		{ "k8s.httproute.name", route },                               \
			{ "k8s.namespace.name", "demo" },                      \
			{ "k8s.gateway.name", "edge" },                        \
			{ "envoy.cluster_name",                                \
			  "httproute/demo/" route "/rule/" rule },             \
			{ "http.request.method", "GET" },                      \
			{ "http.response.status_code", code },                 \
			{ "http.response.status_code_class", klass },          \
	}

TEST(policy_dataplane_upstream_request_count)
{
	const char *paths[] = {
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricdefinition.yaml",
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricpolicy.yaml",
		ROUTES,
	};
	struct cel_attr ok[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	struct cel_attr err5[] = ROUTE_ATTRS("checkout", "0", "5xx", "503");
	struct cel_attr cat[] = ROUTE_ATTRS("catalog", "0", "2xx", "200");
	struct cel_attr nope[] = ROUTE_ATTRS("nope", "0", "2xx", "200");
	struct cel_attr nogw[] = {
		{ "k8s.httproute.name", "checkout" },
		{ "k8s.namespace.name", "demo" },
		{ "envoy.cluster_name", "httproute/demo/checkout/rule/1" },
		{ "http.response.status_code_class", "4xx" },
	};
	struct pe_binding *b1, *b2, *b3, *b4, *none;
	const struct cap_point *p;
	struct pe_ctx x;
	struct capture c;

	ASSERT_EQ(pe_open(&x, paths, 3), 0);
	ASSERT_STREQ(
		tc_reason(&x.t, "MetricPolicy",
			  "gateway-httproute-upstream-request-count-policy",
			  COND_PROGRAMMED),
		"NoSource");
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total",
				      ok, 7, &b1),
		  1);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total",
				      err5, 7, &b2),
		  1);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total",
				      cat, 7, &b3),
		  1);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total",
				      nogw, 4, &b4),
		  1);
	/* no such route, or a source no policy selects: not exported */
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total",
				      nope, 7, &none),
		  0);
	ASSERT_TRUE(!none);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.http.downstream_rq_total", ok,
				      7, &none),
		  0);
	for (int i = 0; i < 3; i++)
		pe_binding__record(b1, 1, NOW);
	for (int i = 0; i < 2; i++)
		pe_binding__record(b2, 1, NOW);
	pe_binding__record(b3, 1, NOW);
	pe_binding__record(b4, 1, NOW);
	mstore__unlock(x.s);

	capture_view(x.s, COUNT_METRIC, MT_DELTA, &c);
	ASSERT_TRUE(c.found);
	ASSERT_STREQ(c.unit, "1");
	ASSERT_EQ(c.ins, MI_COUNTER);
	ASSERT_EQ(c.temp, MT_CUMULATIVE);
	ASSERT_EQ(c.n, 4);
	p = find_pt(&c, "resource_name", "checkout", "response_code_family",
		    "2xx");
	ASSERT_TRUE(p);
	ASSERT_NEAR(p->value, 3, 1e-9);
	ASSERT_EQ(p->nl, 6);
	ASSERT_STREQ(lbl(p, "resource_namespace"), "demo");
	ASSERT_STREQ(lbl(p, "resource_uid"), UID_CHECKOUT);
	ASSERT_STREQ(lbl(p, "gateway_name"), "edge");
	ASSERT_STREQ(lbl(p, "upstream_cluster"),
		     "httproute/demo/checkout/rule/0");
	p = find_pt(&c, "resource_name", "checkout", "response_code_family",
		    "5xx");
	ASSERT_TRUE(p);
	ASSERT_NEAR(p->value, 2, 1e-9);
	/* hand-written route: derived uid, same on every node */
	p = find_pt(&c, "resource_name", "catalog", NULL, NULL);
	ASSERT_TRUE(p);
	ASSERT_STREQ(lbl(p, "resource_uid"), UID_CATALOG);
	/* an optional label the sample lacks is left out, not fatal */
	p = find_pt(&c, "response_code_family", "4xx", NULL, NULL);
	ASSERT_TRUE(p);
	ASSERT_TRUE(!lbl(p, "gateway_name"));
	ASSERT_EQ(p->nl, 5);
	ASSERT_STREQ(
		tc_status(&x.t, "MetricPolicy",
			  "gateway-httproute-upstream-request-count-policy",
			  COND_PROGRAMMED),
		"True");

	mstore__lock(x.s);
	pe_binding__free(b1);
	pe_binding__free(b2);
	pe_binding__free(b3);
	pe_binding__free(b4);
	mstore__unlock(x.s);
	pe_close(&x);
}

static void check_latency(const char *const *paths, const char *policy)
{
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "1", "2xx", "200");
	const struct cap_point *p;
	struct pe_binding *b;
	struct pe_ctx x;
	struct capture c;

	ASSERT_EQ(pe_open(&x, paths, 3), 0);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_time", a,
				      7, &b),
		  1);
	pe_binding__record(b, 250, NOW); /* ms */
	pe_binding__record(b, 1500, NOW);
	mstore__unlock(x.s);
	/* what an OTLP exporter sees: the definition's delta temporality */
	capture_view(x.s, LAT_METRIC, MT_DELTA, &c);
	ASSERT_TRUE(c.found);
	ASSERT_STREQ(c.unit, "seconds");
	ASSERT_EQ(c.ins, MI_HISTOGRAM);
	ASSERT_EQ(c.temp, MT_DELTA); /* the definition's temporality */
	ASSERT_EQ(c.n, 1);
	p = &c.pts[0];
	ASSERT_EQ(p->count, 2);
	ASSERT_NEAR(p->sum, 1.75, 1e-12);
	ASSERT_NEAR(p->min, 0.25, 1e-12);
	ASSERT_NEAR(p->max, 1.5, 1e-12);
	/*
	 * value / 1000.0 is affine: the target keeps Envoy's buckets, each
	 * bound in seconds (what a recording rule or scale_metric computes)
	 */
	ASSERT_EQ(p->nbounds, source_catalogue__envoy_nbounds);
	for (size_t i = 0; i < p->nbounds; i++)
		ASSERT_TRUE(p->bounds[i] ==
			    source_catalogue__envoy_bounds[i] * (1 / 1000.0));
	ASSERT_NEAR(p->bound0, 0.0005, 1e-12);
	for (size_t i = 0; i <= p->nbounds; i++) /* 250 ms, 1500 ms */
		ASSERT_EQ(p->counts[i], (uint64_t)(i == 7 || i == 10));
	ASSERT_STREQ(lbl(p, "resource_name"), "checkout");
	ASSERT_STREQ(lbl(p, "resource_namespace"), "demo");
	ASSERT_STREQ(lbl(p, "resource_uid"), UID_CHECKOUT);
	ASSERT_STREQ(lbl(p, "gateway_name"), "edge");
	ASSERT_STREQ(lbl(p, "upstream_cluster"),
		     "httproute/demo/checkout/rule/1");
	ASSERT_EQ(p->nl, 5);
	ASSERT_STREQ(tc_status(&x.t, "MetricPolicy", policy, COND_PROGRAMMED),
		     "True");
	mstore__lock(x.s);
	pe_binding__free(b);
	mstore__unlock(x.s);
	pe_close(&x);
}

TEST(policy_dataplane_upstream_latency_in_seconds)
{
	const char *paths[] = {
		SEED_DIR
		"/seed-scenario-upstream-latency-metricdefinition.yaml",
		SEED_DIR "/seed-scenario-upstream-latency-metricpolicy.yaml",
		ROUTES,
	};

	check_latency(paths, "gateway-httproute-upstream-latency-policy");
}

TEST(policy_dataplane_complete_latency_example)
{
	const char *paths[] = {
		SEED_TWINS_DIR "/seed-complete-metricdefinition.yaml",
		SEED_TWINS_DIR "/seed-complete-metricpolicy-dataplane.yaml",
		ROUTES,
	};

	check_latency(paths, "httproute-upstream-latency-policy");
}

/* A counter definition + policy with a given value CEL and temporality. */
static const char *counter_pair(char *buf, size_t len, const char *name,
				const char *src, const char *temp,
				const char *cel, const char *type,
				const char *label_cel)
{
	snprintf(
		buf, len,
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricDefinition\n"
		"metadata: {name: %s}\n"
		"spec:\n"
		"  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"
		"  metric:\n"
		"    name: gateway.networking.k8s.io.httproute.%s\n"
		"    instrument: {type: %s, unit: \"1\"}\n"
		"  labels:\n"
		"    - {key: resource_name, required: true}\n"
		"---\n"
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricPolicy\n"
		"metadata: {name: %s-policy}\n"
		"spec:\n"
		"  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}\n"
		"  targetMetric: {name: gateway.networking.k8s.io.httproute.%s}\n"
		"  source:\n"
		"    type: DataPlane\n"
		"    dataPlane:\n"
		"      selector:\n"
		"        otel:\n"
		"          metricName: %s\n"
		"          temporality: %s\n"
		"          attributeSelectors:\n"
		"            - {key: k8s.httproute.name, valueFrom: resource.metadata.name}\n"
		"            - {key: k8s.namespace.name, valueFrom: resource.metadata.namespace}\n"
		"      transform:\n"
		"        value: {cel: \"%s\"}\n"
		"        labels: {resource_name: \"%s\"}\n",
		name, name, type, name, name, src, temp, cel, label_cel);
	return buf;
}

static double value_of(struct mstore *s, const char *short_name)
{
	char metric[128];
	struct capture c;

	snprintf(metric, sizeof(metric),
		 "gateway.networking.k8s.io.httproute.%s", short_name);
	capture(s, metric, &c);
	if (c.n != 1)
		return -12345;
	return c.pts[0].value;
}

struct stats_cap {
	const char *policy;
	struct pe_stats st;
	bool found;
};

static void stats_cb(void *ctx, const struct pe_stats *st)
{
	struct stats_cap *sc = ctx;

	if (strcmp(st->policy, sc->policy))
		return;
	sc->st = *st;
	sc->found = true;
}

static struct pe_stats stats_of(struct policy_engine *e, const char *policy)
{
	struct stats_cap sc = { .policy = policy };

	policy_engine__stats(e, stats_cb, &sc);
	return sc.st;
}

TEST(policy_counter_value_semantics)
{
	const char *dir = test__tmpdir();
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	const char *paths[] = { dir, ROUTES };
	struct pe_binding *b[4];
	char y[4096];
	struct pe_ctx x;

	/* cumulative source, non-linear f: target = f(T) - f(0) */
	tc_write(dir, "a.yaml",
		 counter_pair(y, sizeof(y), "sq", "src.a", "cumulative",
			      "value * value", "Counter",
			      "resource.metadata.name"));
	/* delta source: f per increment, offsets included */
	tc_write(dir, "b.yaml",
		 counter_pair(y, sizeof(y), "plus", "src.b", "delta",
			      "value + 1.0", "Counter",
			      "resource.metadata.name"));
	/* a counter that would go down: dropped and counted */
	tc_write(dir, "c.yaml",
		 counter_pair(y, sizeof(y), "neg", "src.c", "cumulative",
			      "0.0 - value * 2.0", "Counter",
			      "resource.metadata.name"));
	/* cumulative linear with an offset: the offset cancels */
	tc_write(dir, "d.yaml",
		 counter_pair(y, sizeof(y), "lin", "src.d", "cumulative",
			      "value * 2.0 + 7.0", "UpDownCounter",
			      "resource.metadata.name"));
	ASSERT_EQ(pe_open(&x, paths, 2), 0);
	ASSERT_EQ(contract__rejected(x.t.c), 0);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "src.a", a, 7, &b[0]), 1);
	ASSERT_EQ(policy_engine__bind(x.e, "src.b", a, 7, &b[1]), 1);
	ASSERT_EQ(policy_engine__bind(x.e, "src.c", a, 7, &b[2]), 1);
	ASSERT_EQ(policy_engine__bind(x.e, "src.d", a, 7, &b[3]), 1);
	for (int i = 0; i < 3; i++)
		for (int j = 0; j < 4; j++)
			pe_binding__record(b[j], 1, NOW);
	mstore__unlock(x.s);
	ASSERT_NEAR(value_of(x.s, "sq"), 9, 1e-9);
	ASSERT_NEAR(value_of(x.s, "plus"), 6, 1e-9);
	ASSERT_NEAR(value_of(x.s, "lin"), 6, 1e-9);
	ASSERT_EQ(stats_of(x.e, "neg-policy").dropped, 3);
	ASSERT_EQ(stats_of(x.e, "sq-policy").records, 3);
	mstore__lock(x.s);
	for (int j = 0; j < 4; j++)
		pe_binding__free(b[j]);
	mstore__unlock(x.s);
	pe_close(&x);
}

TEST(policy_eval_errors_counted_never_fatal)
{
	const char *dir = test__tmpdir();
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	const char *paths[] = { dir, ROUTES };
	struct pe_binding *b, *none;
	struct pe_stats st;
	char y[4096];
	struct pe_ctx x;

	/* value reads an attribute the sample lacks: every event dropped */
	tc_write(dir, "a.yaml",
		 counter_pair(
			 y, sizeof(y), "badvalue", "src.a", "delta",
			 "attributes['missing'] == 'x' ? value : value * 2.0",
			 "Histogram", "resource.metadata.name"));
	/* a required label that cannot be produced: no binding at all */
	tc_write(dir, "b.yaml",
		 counter_pair(y, sizeof(y), "badlabel", "src.b", "delta",
			      "value", "Counter", "attributes['missing']"));
	ASSERT_EQ(pe_open(&x, paths, 2), 0);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "src.a", a, 7, &b), 1);
	for (int i = 0; i < 5; i++)
		pe_binding__record(b, 10, NOW);
	ASSERT_EQ(policy_engine__bind(x.e, "src.b", a, 7, &none), 0);
	mstore__unlock(x.s);
	st = stats_of(x.e, "badvalue-policy");
	ASSERT_EQ(st.eval_errors, 5);
	ASSERT_EQ(st.dropped, 5);
	ASSERT_EQ(st.bindings, 1);
	st = stats_of(x.e, "badlabel-policy");
	ASSERT_EQ(st.label_errors, 1);
	ASSERT_EQ(st.bindings, 0);
	mstore__lock(x.s);
	pe_binding__free(b);
	mstore__unlock(x.s);
	pe_close(&x);
}

TEST(policy_bindings_invalidated_on_change)
{
	const char *dir = test__tmpdir();
	const char *paths[] = { dir };
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	struct pe_binding *b, *b2;
	struct pe_ctx x;
	uint64_t gen;
	struct capture c;

	ASSERT_EQ(
		tc_copy(SEED_DIR
			"/seed-scenario-upstream-request-count-metricdefinition.yaml",
			dir, "d.yaml"),
		0);
	ASSERT_EQ(
		tc_copy(SEED_DIR
			"/seed-scenario-upstream-request-count-metricpolicy.yaml",
			dir, "p.yaml"),
		0);
	ASSERT_EQ(tc_copy(ROUTES, dir, "routes.yaml"), 0);
	ASSERT_EQ(pe_open(&x, paths, 1), 0);
	gen = policy_engine__generation(x.e);
	ASSERT_EQ(policy_engine__sync(x.e, x.t.src), 0); /* nothing new */
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total", a,
				      7, &b),
		  1);
	ASSERT_EQ(pe_binding__generation(b), gen);
	pe_binding__record(b, 1, NOW);
	mstore__unlock(x.s);

	/* the route is renamed: the engine rebuilds, the old binding is stale */
	unlink(tc_write(dir, "routes.yaml", ""));
	tc_write(dir, "routes2.yaml",
		 "apiVersion: gateway.networking.k8s.io/v1\n"
		 "kind: HTTPRoute\n"
		 "metadata: {name: checkout-v2, namespace: demo}\n"
		 "spec: {}\n");
	ASSERT_EQ(tc_reload(&x.t), 1);
	ASSERT_EQ(policy_engine__sync(x.e, x.t.src), 1);
	ASSERT_TRUE(policy_engine__generation(x.e) != gen);
	ASSERT_TRUE(pe_binding__generation(b) !=
		    policy_engine__generation(x.e));
	mstore__lock(x.s);
	pe_binding__record(b, 1, NOW); /* still safe until the agent rebinds */
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total", a,
				      7, &b2),
		  0);
	pe_binding__free(b);
	mstore__unlock(x.s);
	capture(x.s, COUNT_METRIC, &c);
	ASSERT_TRUE(c.found);

	/* the policy goes away: its target metric leaves the store */
	unlink(tc_write(dir, "p.yaml", ""));
	ASSERT_EQ(tc_reload(&x.t), 1);
	ASSERT_EQ(policy_engine__sync(x.e, x.t.src), 1);
	capture(x.s, COUNT_METRIC, &c);
	ASSERT_TRUE(!c.found);
	pe_close(&x);
}

TEST(policy_resource_fields_condition_status)
{
	const char *paths[] = {
		SEED_DIR
		"/seed-scenario-condition-status-metricdefinition.yaml",
		SEED_DIR "/seed-scenario-condition-status-metricpolicy.yaml",
		ROUTES,
	};
	const struct cap_point *p;
	struct pe_ctx x;
	struct capture c;

	ASSERT_EQ(pe_open(&x, paths, 3), 0);
	ASSERT_EQ(policy_engine__collect_resource_fields(x.e, NOW), 4);
	capture(x.s, COND_METRIC, &c);
	ASSERT_TRUE(c.found);
	ASSERT_EQ(c.ins, MI_GAUGE);
	ASSERT_STREQ(c.unit, "1");
	ASSERT_EQ(c.n, 4);
	p = find_pt(&c, "resource_name", "checkout", "condition", "Accepted");
	ASSERT_TRUE(p);
	ASSERT_NEAR(p->value, 1, 0);
	ASSERT_STREQ(lbl(p, "reason"), "Accepted");
	ASSERT_STREQ(lbl(p, "resource_uid"), UID_CHECKOUT);
	ASSERT_STREQ(lbl(p, "resource_namespace"), "demo");
	ASSERT_EQ(p->nl, 5);
	p = find_pt(&c, "resource_name", "catalog", "condition",
		    "ResolvedRefs");
	ASSERT_TRUE(p);
	ASSERT_NEAR(p->value, 0, 0);
	ASSERT_STREQ(lbl(p, "reason"), "BackendNotFound");
	ASSERT_STREQ(lbl(p, "resource_uid"), UID_CATALOG);
	ASSERT_STREQ(tc_message(&x.t, "MetricPolicy",
				"gateway-httproute-condition-status-policy",
				COND_PROGRAMMED),
		     "4 series from 2 HTTPRoute object(s)");
	pe_close(&x);
}

TEST(policy_resource_fields_created_deleted_info)
{
	const char *paths[] = { SEED_DIR, SEED_TWINS_DIR, ROUTES,
				TDATA "/routes-deleting.yaml" };
	const struct cap_point *p;
	struct pe_ctx x;
	struct capture c;

	ASSERT_EQ(pe_open(&x, paths, 4), 0);
	ASSERT_TRUE(policy_engine__collect_resource_fields(x.e, NOW) > 0);

	capture(x.s, "gateway.networking.k8s.io.httproute.created", &c);
	ASSERT_EQ(c.n, 3);
	ASSERT_STREQ(c.unit, "seconds");
	p = find_pt(&c, "resource_name", "checkout", NULL, NULL);
	ASSERT_TRUE(p);
	ASSERT_NEAR(p->value, 1740821400, 0);
	p = find_pt(&c, "resource_name", "catalog", NULL, NULL);
	ASSERT_NEAR(p->value, 1740916800, 0);

	/* only the route being deleted has a deletion time */
	capture(x.s, "gateway.networking.k8s.io.httproute.deleted", &c);
	ASSERT_EQ(c.n, 1);
	ASSERT_STREQ(lbl(&c.pts[0], "resource_name"), "legacy");
	ASSERT_NEAR(c.pts[0].value, 1741161600, 0);

	/* info: value 1, static label, dropIf drops the deleting route */
	capture(x.s, "gateway.networking.k8s.io.httproute.info", &c);
	ASSERT_EQ(c.n, 2);
	p = find_pt(&c, "resource_name", "checkout", NULL, NULL);
	ASSERT_TRUE(p);
	ASSERT_NEAR(p->value, 1, 0);
	ASSERT_STREQ(lbl(p, "source"), "manifests");
	ASSERT_STREQ(lbl(p, "gateway_name"), "edge");
	ASSERT_TRUE(!find_pt(&c, "resource_name", "legacy", NULL, NULL));
	ASSERT_EQ(stats_of(x.e, "gateway-httproute-info-policy").dropped, 1);

	/* the condition policy of the seed: 4 series, legacy has none */
	capture(x.s, COND_METRIC, &c);
	ASSERT_EQ(c.n, 4);
	pe_close(&x);
}

static double ns_per_record(struct pe_binding *b, struct mstore *s, int n)
{
	struct timespec t0, t1;

	mstore__lock(s);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++)
		pe_binding__record(b, (double)(i % 2000), NOW);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	mstore__unlock(s);
	return ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / n;
}

TEST(policy_record_cost_affine_vs_eval)
{
	const char *dir = test__tmpdir();
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	const char *paths[] = { dir, ROUTES };
	struct pe_binding *fold, *eval;
	double ns_fold, ns_eval;
	char y[4096];
	struct pe_ctx x;
	struct capture c;
	const int n = 200000;

	tc_write(dir, "a.yaml",
		 counter_pair(y, sizeof(y), "folded", "src.a", "delta",
			      "value / 1000.0", "Histogram",
			      "resource.metadata.name"));
	tc_write(
		dir, "b.yaml",
		counter_pair(
			y, sizeof(y), "evaluated", "src.b", "delta",
			"attributes['k8s.gateway.name'] == 'edge' ? value / 1000.0 : 0.0",
			"Histogram", "resource.metadata.name"));
	ASSERT_EQ(pe_open(&x, paths, 2), 0);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "src.a", a, 7, &fold), 1);
	ASSERT_EQ(policy_engine__bind(x.e, "src.b", a, 7, &eval), 1);
	mstore__unlock(x.s);
	ns_fold = ns_per_record(fold, x.s, n);
	ns_eval = ns_per_record(eval, x.s, n);
	test_log(
		"record into a histogram: affine-folded %.1f ns, cel__eval %.1f ns per event\n",
		ns_fold, ns_eval);
	/* both produced the same observations */
	capture(x.s, "gateway.networking.k8s.io.httproute.folded", &c);
	ASSERT_EQ(c.pts[0].count, (uint64_t)n);
	{
		double sum = c.pts[0].sum;

		capture(x.s, "gateway.networking.k8s.io.httproute.evaluated",
			&c);
		ASSERT_EQ(c.pts[0].count, (uint64_t)n);
		ASSERT_NEAR(c.pts[0].sum, sum, 1e-6 * sum);
	}
	mstore__lock(x.s);
	pe_binding__free(fold);
	pe_binding__free(eval);
	mstore__unlock(x.s);
	pe_close(&x);
}

struct race {
	struct pe_ctx *x;
	bool stop;
	int collects;
};

static void *collector(void *arg)
{
	struct race *r = arg;

	do {
		policy_engine__collect_resource_fields(r->x->e, NOW);
		mstore__collect(r->x->s, MT_CUMULATIVE, NOW, cap_fn,
				&(struct capture){ .metric = "none" });
		r->collects++;
	} while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE));
	return NULL;
}

/* The data path binds under the store lock while collection runs: the
 * lock order (store, then engine) must not deadlock. */
TEST(policy_bind_and_collect_concurrently)
{
	const char *paths[] = { SEED_DIR, SEED_TWINS_DIR, ROUTES };
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	struct race r = { 0 };
	struct pe_ctx x;
	pthread_t th;

	ASSERT_EQ(pe_open(&x, paths, 3), 0);
	r.x = &x;
	ASSERT_EQ(pthread_create(&th, NULL, collector, &r), 0);
	for (int i = 0; i < 2000; i++) {
		struct pe_binding *b;

		mstore__lock(x.s);
		if (policy_engine__bind(x.e, "envoy.cluster.upstream_rq_time",
					a, 7, &b) == 1) {
			pe_binding__record(b, i, NOW);
			pe_binding__free(b);
		}
		mstore__unlock(x.s);
		if (i % 500 == 0)
			policy_engine__sync(x.e, x.t.src);
	}
	__atomic_store_n(&r.stop, true, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	test_log("%d collections ran alongside 2000 binds\n", r.collects);
	ASSERT_TRUE(r.collects > 0);
	pe_close(&x);
}

TEST(policy_ambiguous_selectors_counted)
{
	const char *dir = test__tmpdir();
	const char *paths[] = { dir };
	struct cel_attr a[] = { { "k8s.httproute.name", "web" } };
	struct pe_binding *b;
	struct pe_ctx x;
	char y[4096], *p;

	/* selects by name only: two namespaces have a route "web" */
	counter_pair(y, sizeof(y), "byname", "src.a", "delta", "value",
		     "Counter", "resource.metadata.namespace");
	p = strstr(y, "            - {key: k8s.namespace.name");
	ASSERT_TRUE(p);
	*p = 0;
	strcat(y,
	       "      transform:\n"
	       "        labels: {resource_name: resource.metadata.namespace}\n");
	tc_write(dir, "a.yaml", y);
	tc_write(dir, "routes.yaml",
		 "apiVersion: gateway.networking.k8s.io/v1\n"
		 "kind: HTTPRoute\n"
		 "metadata: {name: web, namespace: a}\n"
		 "---\n"
		 "apiVersion: gateway.networking.k8s.io/v1\n"
		 "kind: HTTPRoute\n"
		 "metadata: {name: web, namespace: b}\n");
	ASSERT_EQ(pe_open(&x, paths, 1), 0);
	ASSERT_EQ(contract__rejected(x.t.c), 0);
	ASSERT_EQ(stats_of(x.e, "byname-policy").ambiguous, 1);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "src.a", a, 1, &b), 1);
	pe_binding__free(b);
	mstore__unlock(x.s);
	pe_close(&x);
}

/*
 * The source interface with another backend (what the Kubernetes API
 * source will be): objects held in memory, a change notion, errors.
 */
struct mem_backend {
	int version; /* bumped by the test to simulate a watch event */
	int seen;
	bool fail;
};

struct mem_owner {
	struct doc_file *files[3];
	struct doc_node *route;
};

static struct doc_node *route(const char *name)
{
	struct doc_node *r = doc__new_map(), *md = doc__new_map();

	doc__map_set(r, "apiVersion",
		     doc__new_str("gateway.networking.k8s.io/v1"));
	doc__map_set(r, "kind", doc__new_str("HTTPRoute"));
	doc__map_set(md, "name", doc__new_str(name));
	doc__map_set(md, "namespace", doc__new_str("demo"));
	doc__map_set(md, "uid", doc__new_str("uid-from-the-api-server"));
	doc__map_set(r, "metadata", md);
	return r;
}

static void mem_release(void *owner)
{
	struct mem_owner *o = owner;

	for (int i = 0; i < 3; i++)
		doc__free_file(o->files[i]);
	doc__free(o->route);
	free(o);
}

static void mem_add(struct msrc_snapshot *snap, const struct doc_node *n,
		    const char *file)
{
	snap->objs =
		realloc(snap->objs, (snap->nobjs + 1) * sizeof(*snap->objs));
	snap->objs[snap->nobjs++] = (struct mobject){
		.root = n,
		.api_version = doc__str(n, "apiVersion"),
		.kind = doc__str(n, "kind"),
		.name = doc__str(n, "metadata.name"),
		.ns = doc__str(n, "metadata.namespace"),
		.file = file,
		.line = n->line,
	};
}

static int mem_refresh(void *impl, struct msrc_snapshot *snap)
{
	static const char *const files[] = {
		SEED_DIR
		"/seed-scenario-condition-status-metricdefinition.yaml",
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricdefinition.yaml",
		SEED_DIR
		"/seed-scenario-upstream-request-count-metricpolicy.yaml",
	};
	struct mem_backend *m = impl;
	struct mem_owner *o;
	char err[256];

	if (m->fail)
		return -ECONNREFUSED;
	if (m->seen == m->version)
		return 0;
	m->seen = m->version;
	o = calloc(1, sizeof(*o));
	snap->owner = o;
	snap->release = mem_release;
	for (int i = 0; i < 3; i++) {
		if (doc__parse_file(files[i], &o->files[i], err, sizeof(err)))
			return -EINVAL;
		mem_add(snap, o->files[i]->docs[0], "k8s");
	}
	o->route = route(m->version == 1 ? "checkout" : "checkout-v2");
	mem_add(snap, o->route, "k8s");
	return 1;
}

static const struct msrc_backend mem_ops = { .name = "memory",
					     .refresh = mem_refresh };

TEST(policy_other_source_backend_and_reload)
{
	struct mem_backend mb = { .version = 1 };
	struct cel_attr a[] = ROUTE_ATTRS("checkout", "0", "2xx", "200");
	struct pe_binding *b;
	struct pe_ctx x = { 0 };
	struct capture c;

	x.t.src = manifest_source__new(&mem_ops, &mb);
	x.t.c = contract__new();
	x.s = mstore__new(NULL);
	x.e = policy_engine__new(x.s, x.t.c);
	ASSERT_EQ(contract__reload(x.t.src, x.t.c, x.e), 1);
	ASSERT_EQ(contract__reload(x.t.src, x.t.c, x.e), 0);
	ASSERT_EQ(contract__rejected(x.t.c), 0);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total", a,
				      7, &b),
		  1);
	pe_binding__record(b, 1, NOW);
	pe_binding__free(b);
	mstore__unlock(x.s);
	capture(x.s, COUNT_METRIC, &c);
	ASSERT_EQ(c.n, 1);
	/* the API's uid is kept, not replaced by a derived one */
	ASSERT_STREQ(lbl(&c.pts[0], "resource_uid"), "uid-from-the-api-server");

	/* a watch event renames the route */
	mb.version = 2;
	ASSERT_EQ(contract__reload(x.t.src, x.t.c, x.e), 1);
	mstore__lock(x.s);
	ASSERT_EQ(policy_engine__bind(x.e, "envoy.cluster.upstream_rq_total", a,
				      7, &b),
		  0);
	mstore__unlock(x.s);

	/* the source fails: the old state stays, the error is visible */
	mb.fail = true;
	ASSERT_EQ(contract__reload(x.t.src, x.t.c, x.e), -ECONNREFUSED);
	ASSERT_EQ(manifest_source__count(x.t.src), 4);
	ASSERT_TRUE(
		strstr(manifest_source__error(
			       x.t.src, manifest_source__nerrors(x.t.src) - 1),
		       "memory"));
	ASSERT_EQ(contract__rejected(x.t.c), 0);
	pe_close(&x);
}

/* The seed's commented dropIf, verbatim: live routes stay, the deleting one goes. */
TEST(policy_seed_dropif_keeps_live_routes)
{
	const char *dir = test__tmpdir();
	const char *paths[] = { dir, ROUTES, TDATA "/routes-deleting.yaml" };
	struct pe_ctx x;
	struct capture c;

	tc_write(
		dir, "def.yaml",
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricDefinition\n"
		"metadata: {name: live-routes}\n"
		"spec:\n"
		"  resource: {group: gateway.networking.k8s.io, kind: HTTPRoute}\n"
		"  metric:\n"
		"    name: gateway.networking.k8s.io.httproute.live\n"
		"    description: Routes not being deleted.\n"
		"    instrument: {type: Gauge, unit: \"1\"}\n"
		"  labels:\n"
		"    - {key: resource_name, required: true}\n");
	tc_write(
		dir, "pol.yaml",
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricPolicy\n"
		"metadata: {name: live-routes-policy}\n"
		"spec:\n"
		"  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}\n"
		"  targetMetric: {name: gateway.networking.k8s.io.httproute.live}\n"
		"  source:\n"
		"    type: ResourceFields\n"
		"    resourceFields:\n"
		"      seriesFrom:\n"
		"        path: resource\n"
		"        value: {cel: \"1\"}\n"
		"        labels: {resource_name: resource.metadata.name}\n"
		"      dropIf:\n"
		"        cel: \"resource.metadata.deletionTimestamp != null\"\n");
	ASSERT_EQ(pe_open(&x, paths, 3), 0);
	ASSERT_TRUE(policy_engine__collect_resource_fields(x.e, NOW) > 0);
	capture(x.s, "gateway.networking.k8s.io.httproute.live", &c);
	ASSERT_EQ(c.n, 2);
	ASSERT_TRUE(find_pt(&c, "resource_name", "checkout", NULL, NULL));
	ASSERT_TRUE(find_pt(&c, "resource_name", "catalog", NULL, NULL));
	ASSERT_TRUE(!find_pt(&c, "resource_name", "legacy", NULL, NULL));
	/* the two "no such key" evaluations are counted, not silent */
	ASSERT_EQ(stats_of(x.e, "live-routes-policy").eval_errors, 2);
	ASSERT_EQ(stats_of(x.e, "live-routes-policy").dropped, 1);
	pe_close(&x);
}
