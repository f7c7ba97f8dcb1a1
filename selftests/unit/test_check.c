// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer check` on the mistakes users make: each must exit 1 with a
 * file:line message naming the fix (and the closest valid spelling where
 * there is one); what may be right later is a warning, exit 0; one bad
 * object never hides another; the shipped examples pass.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"
#include "policy/source/manifest_source.h"

#define GATEWAY_YAML                                                           \
	"apiVersion: gateway.networking.k8s.io/v1\n"      /* 1 */              \
	"kind: Gateway\n"                                 /* 2 */              \
	"metadata: {name: gw, namespace: infra}\n"        /* 3 */              \
	"spec:\n"                                         /* 4 */              \
	"  listeners:\n"                                  /* 5 */              \
	"  - name: http\n"                                /* 6 */              \
	"    port: 80\n"                                  /* 7 */              \
	"    protocol: HTTP\n"                            /* 8 */              \
	"    hostname: \"*.example.com\"\n"               /* 9 */              \
	"    allowedRoutes: {namespaces: {from: All}}\n"  /* 10 */             \
	"  - name: https\n"                               /* 11 */             \
	"    port: 443\n"                                 /* 12 */             \
	"    protocol: HTTPS\n"                           /* 13 */             \
	"    allowedRoutes: {namespaces: {from: Same}}\n" /* 14 */

#define ROUTE_HEAD(name)                                                       \
	"apiVersion: gateway.networking.k8s.io/v1\n"                           \
	"kind: HTTPRoute\n"                                                    \
	"metadata: {name: " name ", namespace: t}\n"                           \
	"spec:\n"

struct run {
	int rc;
	char *out, *err;
};

static void run_free(struct run *r)
{
	free(r->out);
	free(r->err);
}

static struct run check_path(const char *path, bool json)
{
	struct run r;
	const char *args[] = { "--manifests", path, "--json" };

	r.rc = tc_check(args, json ? 3 : 2, &r.out, &r.err);
	return r;
}

/* A directory holding the Gateway and one file with yaml in it. */
static const char *with_gateway(const char *name, const char *yaml)
{
	const char *dir = test__tmpdir();

	tc_write(dir, "gw.yaml", GATEWAY_YAML);
	tc_write(dir, name, yaml);
	return dir;
}

#define ASSERT_OUT(r, s)                                                       \
	ASSERT_TRUE(strstr((r).out, (s)), "want \"%s\" in:\n%s", (s), (r).out)

TEST(check_shipped_examples_pass)
{
	struct run r = check_path("deploy/examples", false);

	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, " 0 rejected, 0 manifest error(s), 1 warning(s)");
	/* the seed's condition policy reads what HTTPRoute keeps elsewhere */
	ASSERT_OUT(
		r,
		"    warning: deploy/examples/contract/seed-scenario-condition-status-metricpolicy.yaml:16: spec.source.resourceFields.seriesFrom.path: `resource.status.conditions` is not in the HTTPRoute schema (gateway.networking.k8s.io/v1): the Gateway API keeps an HTTPRoute's conditions per parent Gateway, under status.parents[].conditions");
	/* it descends into deploy/examples/contract/ */
	ASSERT_OUT(
		r,
		"deploy/examples/contract/seed-scenario-upstream-request-count-metricpolicy.yaml:1: MetricPolicy");
	ASSERT_OUT(
		r,
		"deploy/examples/contract-gateway.yaml:2: Gateway demo/edge");
	ASSERT_OUT(
		r,
		"deploy/examples/demo-httproutes.yaml:3: HTTPRoute demo/api\n    parentRef Gateway demo/edge:\n      Accepted      True    Accepted");
	run_free(&r);
	r = check_path("deploy/examples/contract", false);
	ASSERT_EQ(r.rc, 0);
	run_free(&r);
	/* the seed's twins beside them are the deliberate conflict */
	{
		const char *args[] = { "-m", SEED_DIR, "-m", SEED_TWINS_DIR };

		r.rc = tc_check(args, 4, &r.out, &r.err);
	}
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "Conflicted");
	ASSERT_OUT(r, "DuplicateMetric");
	ASSERT_OUT(r, " 3 rejected,");
	run_free(&r);
}

TEST(check_descends_and_says_what_it_skipped)
{
	const char *dir = test__tmpdir();
	char sub[256], deep[256];
	struct run r;

	snprintf(sub, sizeof(sub), "%.200s/team-a", dir);
	snprintf(deep, sizeof(deep), "%.200s/team-a/routes", dir);
	ASSERT_EQ(mkdir(sub, 0755), 0);
	ASSERT_EQ(mkdir(deep, 0755), 0);
	tc_write(dir, "gw.yaml", GATEWAY_YAML);
	tc_write(
		deep, "r.yml",
		ROUTE_HEAD(
			"deep") "  parentRefs: [{name: gw, namespace: infra, sectionName: http}]\n"
				"  hostnames: [a.example.com]\n");
	tc_write(sub, "notes.md", "# not a manifest\n");
	tc_write(dir, "deploy.yaml",
		 "apiVersion: apps/v1\nkind: Deployment\n"
		 "metadata: {name: web, namespace: t}\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(
		r,
		"/team-a/routes/r.yml:1: HTTPRoute t/deep\n    parentRef Gateway infra/gw sectionName http:\n      Accepted      True    Accepted               Attached to listener(s) http.");
	ASSERT_OUT(r, "note: ");
	ASSERT_OUT(r, "/team-a/notes.md: skipped: not a *.yaml or *.yml file");
	ASSERT_OUT(
		r,
		"/deploy.yaml:1: Deployment t/web (apps/v1): skipped: milometer reads Gateway, HTTPRoute");
	ASSERT_OUT(
		r,
		"2 object(s), 0 rejected, 0 manifest error(s), 0 warning(s), 2 skipped");
	run_free(&r);
	/* --json says the same */
	r = check_path(dir, true);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, "\"skipped\":[");
	ASSERT_OUT(
		r,
		"\"parents\":[{\"parentRef\":\"Gateway infra/gw sectionName http\",\"conditions\":[{\"type\":\"Accepted\",\"status\":\"True\"");
	run_free(&r);
}

TEST(check_path_type_misspelt)
{
	const char *dir = with_gateway(
		"r.yaml",
		ROUTE_HEAD(
			"typo") "  parentRefs: [{name: gw, namespace: infra}]\n" /* 5 */
				"  rules:\n"     /* 6 */
				"  - matches:\n" /* 7 */
				"    - path: {type: Pathprefix, value: /a}\n"); /* 8 */
	struct run r = check_path(dir, false);

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/r.yaml:1: HTTPRoute t/typo\n    Accepted      False   UnsupportedValue       ");
	ASSERT_OUT(
		r,
		"/r.yaml:8: path.type \"Pathprefix\" is not a Gateway API path match type (did you mean `PathPrefix`?)");
	ASSERT_OUT(r, " 1 rejected,");
	run_free(&r);
}

TEST(check_parent_gateway_missing)
{
	const char *dir = with_gateway(
		"r.yaml",
		ROUTE_HEAD(
			"nogw") "  parentRefs:\n"                       /* 5 */
				"  - {name: gw2, namespace: infra}\n"); /* 6 */
	struct run r = check_path(dir, false);
	char path[512];

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"parentRef Gateway infra/gw2:\n      Accepted      False   NoMatchingParent       ");
	ASSERT_OUT(
		r,
		"/r.yaml:6: Gateway infra/gw2 is not in the manifests (did you mean `infra/gw`?)");
	run_free(&r);
	/* the route checked alone (no Gateway read at all): a warning */
	snprintf(path, sizeof(path), "%s/r.yaml", dir);
	r = check_path(path, false);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, "    warning: ");
	ASSERT_OUT(
		r,
		"/r.yaml:6: Gateway infra/gw2 is not in the manifests read (none is): the route's attachment is not checked");
	ASSERT_OUT(
		r,
		"1 object(s), 0 rejected, 0 manifest error(s), 1 warning(s)");
	run_free(&r);
	/* an invalid Gateway is rejected, and the routes to it say so */
	tc_write(
		dir, "gw.yaml",
		"apiVersion: gateway.networking.k8s.io/v1\nkind: Gateway\n"
		"metadata: {name: gw2, namespace: infra}\nspec:\n  listeners:\n"
		"  - {name: http, port: 0, protocol: HTTP}\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/gw.yaml:1: Gateway infra/gw2\n    Accepted      False   Invalid                ");
	ASSERT_OUT(r, "/gw.yaml:6: listener.port must be 1..65535, not 0");
	ASSERT_OUT(r, "/r.yaml:6: Gateway infra/gw2 (");
	ASSERT_OUT(r, "/gw.yaml:1) is invalid; see its conditions");
	run_free(&r);
}

TEST(check_parent_listener_reasons)
{
	const char *dir = with_gateway(
		"r.yaml",
		ROUTE_HEAD(
			"r") "  hostnames: [shop.other.org]\n" /* 5 */
			     "  parentRefs:\n"                 /* 6 */
			     "  - {name: gw, namespace: infra, sectionName: htp}\n" /* 7 */
			     "  - {name: gw, namespace: infra, sectionName: https}\n" /* 8 */
			     "  - {name: gw, namespace: infra, port: 8080}\n" /* 9 */
			     "  - {name: gw, namespace: infra, port: 80}\n"); /* 10 */
	struct run r = check_path(dir, false);

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/r.yaml:7: Gateway infra/gw has no listener named htp; did you mean `http`? (listeners: http:80, https:443)");
	ASSERT_OUT(
		r,
		"parentRef Gateway infra/gw sectionName https:\n      Accepted      False   NotAllowedByListeners  ");
	ASSERT_OUT(
		r,
		"/r.yaml:8: listener https takes routes from namespace infra only (allowedRoutes from Same)");
	ASSERT_OUT(
		r,
		"parentRef Gateway infra/gw port 8080:\n      Accepted      False   NoMatchingParent       ");
	ASSERT_OUT(
		r,
		"/r.yaml:9: Gateway infra/gw has no listener on port 8080 (listeners: http:80, https:443)");
	ASSERT_OUT(
		r,
		"parentRef Gateway infra/gw port 80:\n      Accepted      False   NoMatchingListenerHostname ");
	ASSERT_OUT(
		r,
		"/r.yaml:10: no hostname of the route intersects listener http's hostname *.example.com");
	run_free(&r);
}

TEST(check_backend_refs)
{
	const char *dir = with_gateway(
		"r.yaml",
		ROUTE_HEAD(
			"r") "  parentRefs: [{name: gw, namespace: infra, sectionName: http}]\n" /* 5 */
			     "  rules:\n"                            /* 6 */
			     "  - backendRefs:\n"                    /* 7 */
			     "    - {name: cm, kind: ConfigMap}\n"); /* 8 */
	struct run r = check_path(dir, false);

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "ResolvedRefs  False   InvalidKind            ");
	ASSERT_OUT(
		r,
		"/r.yaml:8: rule 0 backendRef cm: kind ConfigMap is not supported; use a core Service");
	run_free(&r);

	/* Services in the manifests: a missing one is BackendNotFound */
	tc_write(
		dir, "r.yaml",
		ROUTE_HEAD(
			"r") "  parentRefs: [{name: gw, namespace: infra, sectionName: http}]\n"
			     "  rules:\n"
			     "  - backendRefs:\n"
			     "    - {name: web, port: 80}\n" /* 8 */
			     "    - {name: api, namespace: other, port: 80}\n" /* 9 */
			     "---\n"
			     "apiVersion: v1\nkind: Service\n"
			     "metadata: {name: web, namespace: t}\n");
	tc_write(dir, "svc.yaml",
		 "apiVersion: v1\nkind: Service\n"
		 "metadata: {name: api, namespace: other}\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 0);
	/* no ReferenceGrant anywhere: the cross-namespace ref is a warning */
	ASSERT_OUT(r, "warning: ");
	ASSERT_OUT(
		r,
		"/r.yaml:9: rule 0 backendRef other/api is in another namespace: it needs a ReferenceGrant in other");
	run_free(&r);

	tc_write(
		dir, "grant.yaml",
		"apiVersion: gateway.networking.k8s.io/v1beta1\n"
		"kind: ReferenceGrant\n"
		"metadata: {name: g, namespace: other}\n"
		"spec:\n"
		"  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: elsewhere}]\n"
		"  to: [{group: \"\", kind: Service}]\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "ResolvedRefs  False   RefNotPermitted        ");
	ASSERT_OUT(
		r,
		"/r.yaml:9: rule 0 backendRef other/api is in another namespace and no ReferenceGrant in other lets HTTPRoutes of t refer to it");
	run_free(&r);

	tc_write(
		dir, "grant.yaml",
		"apiVersion: gateway.networking.k8s.io/v1beta1\n"
		"kind: ReferenceGrant\n"
		"metadata: {name: g, namespace: other}\n"
		"spec:\n"
		"  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: t}]\n"
		"  to: [{group: \"\", kind: Service, name: api}]\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, "ResolvedRefs  True    ResolvedRefs ");
	run_free(&r);

	tc_write(dir, "svc.yaml",
		 "apiVersion: v1\nkind: Service\n"
		 "metadata: {name: apx, namespace: other}\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "ResolvedRefs  False   BackendNotFound        ");
	ASSERT_OUT(
		r,
		"/r.yaml:9: rule 0 backendRef Service other/api is not in the manifests");
	run_free(&r);
}

/*
 * A rule whose regular expression is refused is dropped alone: the route
 * is PartiallyInvalid (exit 1), its other rules and every other object in
 * the same file are still there and accepted.
 */
TEST(check_bad_rule_is_dropped_alone)
{
	const char *dir = test__tmpdir();
	struct run r;

	tc_write(
		dir, "all.yaml",
		GATEWAY_YAML "---\n" /* 15 */
		ROUTE_HEAD("mixed")  /* 16 */
		"  parentRefs: [{name: gw, namespace: infra, sectionName: http}]\n" /* 20 */
		"  hostnames: [a.example.com]\n"                     /* 21 */
		"  rules:\n"                                         /* 22 */
		"  - matches: [{path: {type: Exact, value: /ok}}]\n" /* 23 */
		"  - matches: [{path: {type: RegularExpression, value: \"/(.{0,255}){0,255}\"}}]\n" /* 24 */
		"---\n"            /* 25 */
		ROUTE_HEAD("good") /* 26 */
		"  parentRefs: [{name: gw, namespace: infra, sectionName: http}]\n"
		"  hostnames: [b.example.com]\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/all.yaml:1: Gateway infra/gw\n    Accepted      True    Accepted");
	ASSERT_OUT(
		r,
		"/all.yaml:16: HTTPRoute t/mixed\n    parentRef Gateway infra/gw sectionName http:\n      Accepted      True    Accepted ");
	ASSERT_OUT(
		r,
		"PartiallyInvalid True    UnsupportedValue       Dropped Rule 1: ");
	ASSERT_OUT(r, "/all.yaml:24: invalid regular expression");
	ASSERT_OUT(
		r,
		"/all.yaml:26: HTTPRoute t/good\n    parentRef Gateway infra/gw sectionName http:\n      Accepted      True    Accepted ");
	ASSERT_OUT(r, "3 object(s), 1 rejected, 0 manifest error(s)");
	run_free(&r);
}

/* A YAML error in one file is reported; the other files are checked. */
TEST(check_bad_file_does_not_hide_others)
{
	const char *dir = with_gateway("bad.yaml", "a: [\n");
	struct run r = check_path(dir, false);

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/gw.yaml:1: Gateway infra/gw\n    Accepted      True    Accepted");
	ASSERT_OUT(r, "error: ");
	ASSERT_OUT(r, "/bad.yaml:");
	run_free(&r);
}

/* The seed's scenario policy for upstream request counts, with one edit. */
static const char *policy_with(const char *dir, const char *from,
			       const char *to)
{
	static char buf[8192];
	char *at;
	FILE *f =
		fopen(SEED_DIR
		      "/seed-scenario-upstream-request-count-metricpolicy.yaml",
		      "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	at = strstr(buf, from);
	if (!at)
		return NULL;
	{
		char rest[8192];

		snprintf(rest, sizeof(rest), "%s", at + strlen(from));
		snprintf(at, sizeof(buf) - (size_t)(at - buf), "%s%s", to,
			 rest);
	}
	tc_copy(SEED_DIR
		"/seed-scenario-upstream-request-count-metricdefinition.yaml",
		dir, "d.yaml");
	return tc_write(dir, "p.yaml", buf);
}

static struct run check_policy(const char *from, const char *to)
{
	const char *dir = test__tmpdir();
	struct run r = { -1, NULL, NULL };

	if (!policy_with(dir, from, to))
		return r;
	return check_path(dir, false);
}

TEST(check_cel_path_typo)
{
	struct run r = check_policy(
		"resource_namespace: \"resource.metadata.namespace\"",
		"resource_namespace: \"resource.metadata.namepsace\"");

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "Accepted      False   InvalidCEL             ");
	ASSERT_OUT(
		r,
		"/p.yaml:30: spec.source.dataPlane.transform.labels.resource_namespace: `resource.metadata.namepsace`: HTTPRoute (gateway.networking.k8s.io/v1) has no field namepsace in `resource.metadata` (did you mean `resource.metadata.namespace`?)");
	run_free(&r);
	/* ObjectMeta is closed: a field no one is close to is still wrong */
	r = check_policy("valueFrom: \"resource.metadata.name\"",
			 "valueFrom: \"resource.metadata.displayTitle\"");
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/p.yaml:21: spec.source.dataPlane.selector.otel.attributeSelectors[0].valueFrom: `resource.metadata.displayTitle`: ObjectMeta has no field displayTitle (fields: name, namespace, uid");
	run_free(&r);
	/* selecting into a list */
	r = check_policy("resource_uid: \"string(resource.metadata.uid)\"",
			 "resource_uid: \"resource.spec.rules.name\"");
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"`resource.spec.rules` is a list in HTTPRoute: select an element first (`resource.spec.rules[0].name`)");
	run_free(&r);
	/* a list element, a map key, has(): fine */
	r = check_policy(
		"resource_uid: \"string(resource.metadata.uid)\"",
		"resource_uid: \"has(resource.metadata.labels.team) ? resource.metadata.labels['team'] + resource.spec.rules[0].matches[0].path.value : resource.spec.hostnames[0]\"");
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, " 0 warning(s)");
	run_free(&r);
}

TEST(check_unknown_field_outside_schema_is_a_warning)
{
	struct run r = check_policy(
		"resource_uid: \"string(resource.metadata.uid)\"",
		"resource_uid: \"string(resource.spec.tenantId)\"");

	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, "Accepted      True    Accepted ");
	ASSERT_OUT(r, "    warning: ");
	ASSERT_OUT(
		r,
		"/p.yaml:31: spec.source.dataPlane.transform.labels.resource_uid: `resource.spec.tenantId` is not in the HTTPRoute schema (gateway.networking.k8s.io/v1; fields here: parentRefs, hostnames, rules");
	run_free(&r);
}

TEST(check_attribute_key_typo)
{
	struct run r = check_policy("attributes['envoy.cluster_name']",
				    "attributes['envoy.clustername']");

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "Accepted      False   UnknownAttribute       ");
	ASSERT_OUT(
		r,
		"/p.yaml:33: spec.source.dataPlane.transform.labels.upstream_cluster: attribute envoy.clustername is not carried by envoy.cluster.upstream_rq_total samples (did you mean `envoy.cluster_name`?)");
	run_free(&r);
	/* in a selector key too */
	r = check_policy("- key: \"k8s.namespace.name\"",
			 "- key: \"k8s.namespace.nme\"");
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/p.yaml:22: spec.source.dataPlane.selector.otel.attributeSelectors[1]: attribute k8s.namespace.nme is not carried by envoy.cluster.upstream_rq_total samples (did you mean `k8s.namespace.name`?)");
	run_free(&r);
	/* a key unlike any: another data plane's, a warning */
	r = check_policy("attributes['envoy.cluster_name']",
			 "attributes['tenant.billing.account']");
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, "warning: ");
	ASSERT_OUT(
		r,
		"attribute tenant.billing.account is not carried by milometer's envoy.cluster.upstream_rq_total samples");
	run_free(&r);
}

TEST(check_source_metric_typo)
{
	struct run r = check_policy("envoy.cluster.upstream_rq_total",
				    "envoy.cluster.upstream_rq_totl");

	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "Accepted      False   UnknownSourceMetric    ");
	ASSERT_OUT(
		r,
		"/p.yaml:17: spec.source.dataPlane.selector.otel.metricName: milometer produces no source metric envoy.cluster.upstream_rq_totl (did you mean `envoy.cluster.upstream_rq_total`?)");
	run_free(&r);
	r = check_policy("envoy.cluster.upstream_rq_total",
			 "nginx.http.requests");
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r, "warning: ");
	ASSERT_OUT(
		r,
		"/p.yaml:17: spec.source.dataPlane.selector.otel.metricName: milometer produces no source metric nginx.http.requests (it produces envoy.http.downstream_rq_total");
	run_free(&r);
}

/* Every mistake of one policy is said in one run, the first as the condition. */
TEST(check_reports_every_mistake)
{
	const char *dir = test__tmpdir();
	struct run r;

	ASSERT_TRUE(policy_with(dir, "attributes['envoy.cluster_name']",
				"attributes['envoy.clustername']"));
	/* p.yaml now has one typo: add a second one by hand */
	{
		const char *p2 = policy_with(
			dir,
			"resource_namespace: \"resource.metadata.namespace\"",
			"resource_namespace: \"resource.metadata.namepsace\"");
		char cmd[1200];

		ASSERT_TRUE(p2);
		snprintf(
			cmd, sizeof(cmd),
			"sed -i \"s/envoy.cluster_name'/envoy.clustername'/\" %s",
			p2);
		ASSERT_EQ(system(cmd), 0);
	}
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "Accepted      False   InvalidCEL ");
	ASSERT_OUT(r, "warning: ");
	ASSERT_OUT(r, "/p.yaml:33: also wrong (UnknownAttribute): ");
	run_free(&r);
}

/* A subject kind with no known schema: paths are not checked, and check says so. */
TEST(check_unknown_subject_schema_is_a_warning)
{
	struct run r = check_policy("resource.metadata.name",
				    "resource.metadata.name");
	const char *dir = test__tmpdir();

	run_free(&r);
	tc_write(dir, "d.yaml",
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricDefinition\n"
		 "metadata: {name: widget-info}\n"
		 "spec:\n"
		 "  resource: {group: example.com, kind: Widget}\n"
		 "  metric:\n"
		 "    name: example.com.widget.info\n"
		 "    instrument: {type: Gauge, unit: \"1\"}\n"
		 "  labels: [{key: size}]\n");
	tc_write(dir, "p.yaml",
		 "apiVersion: telemetry.miloapis.com/v1alpha1\n"
		 "kind: MetricPolicy\n"
		 "metadata: {name: widget-info}\n"
		 "spec:\n"
		 "  subject: {group: example.com, version: v1, kind: Widget}\n"
		 "  targetMetric: {name: example.com.widget.info}\n"
		 "  source:\n"
		 "    type: ResourceFields\n"
		 "    resourceFields:\n"
		 "      seriesFrom:\n"
		 "        path: resource\n"
		 "        value: {cel: \"1\"}\n"
		 "        labels: {size: \"resource.spec.size\"}\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(
		r,
		"/p.yaml:13: spec.source.resourceFields.seriesFrom.labels.size: the schema of subject example.com/Widget is unknown here, so paths into resource are not checked");
	run_free(&r);
}

/* seriesFrom.path into a list gives item that list's element schema. */
TEST(check_item_follows_series_path)
{
	const char *dir = test__tmpdir();
	struct run r;

	tc_copy(SEED_DIR
		"/seed-scenario-condition-status-metricdefinition.yaml",
		dir, "d.yaml");
	tc_write(
		dir, "p.yaml",
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricPolicy\n"
		"metadata: {name: parents}\n"
		"spec:\n"
		"  subject: {group: gateway.networking.k8s.io, version: v1, kind: HTTPRoute}\n"
		"  targetMetric: {name: gateway.networking.k8s.io.httproute.status.condition}\n"
		"  source:\n"
		"    type: ResourceFields\n"
		"    resourceFields:\n"
		"      seriesFrom:\n"
		"        path: resource.status.parents\n"
		"        value: {cel: \"size(item.conditions)\"}\n"
		"        labels:\n"
		"          resource_name: resource.metadata.name\n"
		"          resource_namespace: resource.metadata.namespace\n"
		"          resource_uid: string(resource.metadata.uid)\n"
		"          condition: item.parentRef.nme\n");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/p.yaml:17: spec.source.resourceFields.seriesFrom.labels.condition: `item.parentRef.nme`: HTTPRoute (gateway.networking.k8s.io/v1) has no field nme in `item.parentRef` (did you mean `item.parentRef.name`?)");
	run_free(&r);
}

/* The agent's route table reloads when a file under a sub-directory changes. */
TEST(check_fingerprint_follows_sub_directories)
{
	const char *dir = test__tmpdir();
	char sub[256];
	uint64_t a, b, c;

	snprintf(sub, sizeof(sub), "%.200s/team-a", dir);
	ASSERT_EQ(mkdir(sub, 0755), 0);
	tc_write(sub, "r.yaml", "a: 1\n");
	a = manifest_source__fingerprint(dir);
	ASSERT_TRUE(a != 0);
	tc_write(sub, "notes.txt", "not read\n");
	ASSERT_EQ(manifest_source__fingerprint(dir), a);
	tc_write(sub, "r.yaml", "a: 12\n");
	b = manifest_source__fingerprint(dir);
	ASSERT_TRUE(b != a);
	tc_write(sub, "s.yml", "b: 1\n");
	c = manifest_source__fingerprint(dir);
	ASSERT_TRUE(c != b);
	ASSERT_EQ(manifest_source__fingerprint("/nonexistent/dir"), 0);
}

/* A subject whose CRD is in the manifests is held to its openAPIV3Schema. */
TEST(check_subject_crd_schema_from_manifests)
{
	const char *dir = test__tmpdir();
	static const char crd[] =
		"apiVersion: apiextensions.k8s.io/v1\n"
		"kind: CustomResourceDefinition\n"
		"metadata: {name: widgets.example.com}\n"
		"spec:\n"
		"  group: example.com\n"
		"  names: {kind: Widget, plural: widgets}\n"
		"  scope: Namespaced\n"
		"  versions:\n"
		"  - name: v1\n"
		"    served: true\n"
		"    storage: true\n"
		"    schema:\n"
		"      openAPIV3Schema:\n"
		"        type: object\n"
		"        properties:\n"
		"          spec:\n"
		"            type: object\n"
		"            properties:\n"
		"              size: {type: string}\n"
		"              parts: {type: array, items: {type: object, properties: {name: {type: string}}}}\n"
		"              extra: {type: object, x-kubernetes-preserve-unknown-fields: true}\n"
		"              tags: {type: object, additionalProperties: {type: string}}\n";
	static const char def[] =
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"
		"kind: MetricDefinition\n"
		"metadata: {name: widget-info}\n"
		"spec:\n"
		"  resource: {group: example.com, kind: Widget}\n"
		"  metric:\n"
		"    name: example.com.widget.info\n"
		"    instrument: {type: Gauge, unit: \"1\"}\n"
		"  labels: [{key: size}]\n";
	char pol[2048];
	struct run r;

	tc_write(dir, "crd.yaml", crd);
	tc_write(dir, "d.yaml", def);
#define WIDGET_POLICY(expr)                                                    \
	snprintf(                                                              \
		pol, sizeof(pol),                                              \
		"apiVersion: telemetry.miloapis.com/v1alpha1\n"                \
		"kind: MetricPolicy\n"                                         \
		"metadata: {name: widget-info}\n"                              \
		"spec:\n"                                                      \
		"  subject: {group: example.com, version: v1, kind: Widget}\n" \
		"  targetMetric: {name: example.com.widget.info}\n"            \
		"  source:\n"                                                  \
		"    type: ResourceFields\n"                                   \
		"    resourceFields:\n"                                        \
		"      seriesFrom:\n"                                          \
		"        path: resource\n"                                     \
		"        value: {cel: \"1\"}\n"                                \
		"        labels: {size: \"%s\"}\n",                            \
		expr);                                                         \
	tc_write(dir, "p.yaml", pol)

	WIDGET_POLICY(
		"resource.spec.size + resource.metadata.name + resource.spec.parts[0].name + resource.spec.extra.anything + resource.spec.tags['x']");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(
		r,
		"2 object(s), 0 rejected, 0 manifest error(s), 0 warning(s), 0 skipped");
	run_free(&r);
	WIDGET_POLICY("resource.spec.sise");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"/p.yaml:13: spec.source.resourceFields.seriesFrom.labels.size: `resource.spec.sise`: Widget (its CRD's schema) has no field sise in `resource.spec` (did you mean `resource.spec.size`?)");
	run_free(&r);
	/* pruned by the API server: never there, an error even with no near name */
	WIDGET_POLICY("resource.spec.colour");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(
		r,
		"has no field colour in `resource.spec` (fields: size, parts, extra, tags)");
	run_free(&r);
	WIDGET_POLICY("resource.spec.parts[0].nmae");
	r = check_path(dir, false);
	ASSERT_EQ(r.rc, 1);
	ASSERT_OUT(r, "(did you mean `resource.spec.parts[...].name`?)");
	run_free(&r);
#undef WIDGET_POLICY
}

/*
 * `check --kubeconfig`: the cluster's CRDs come through check_api (here a
 * stand-in reading a directory as "the cluster"): a custom subject is held
 * to the installed CRD, a CRD in the manifests wins, and -v says which.
 */
static const char *fake_cluster_dir;

static int fake_open(const char *kubeconfig, bool objects,
		     struct manifest_source **crds,
		     struct manifest_source **objs, void **handle, char *server,
		     size_t serverlen, char *err, size_t errlen)
{
	const char *paths[] = { fake_cluster_dir };

	(void)objs;
	if (objects || strcmp(kubeconfig, "fake.kubeconfig")) {
		snprintf(
			err, errlen,
			"cannot reach the Kubernetes API server https://fake:6443");
		return -ECONNREFUSED;
	}
	snprintf(server, serverlen, "https://fake:6443");
	*crds = manifest_source__open_paths(paths, 1, err, errlen);
	*handle = crds;
	return *crds ? 0 : -ENOENT;
}

static void fake_close(void *handle)
{
	(void)handle;
}

static int check_fake(const char *dir, const char *kubeconfig, char **out,
		      char **errs)
{
	static const struct check_api api = { fake_open, fake_close };
	char *argv[] = { "check",        "--manifests",      (char *)dir,
			 "--kubeconfig", (char *)kubeconfig, "-v" };
	size_t olen, elen;
	FILE *o = open_memstream(out, &olen), *e = open_memstream(errs, &elen);
	int rc;

	test_log_to(e);
	rc = check__run_api(6, argv, o, e, &api);
	test_log_to(NULL);
	fclose(o);
	fclose(e);
	return rc;
}

#define WIDGET_CRD(field)                                                      \
	"apiVersion: apiextensions.k8s.io/v1\n"                                \
	"kind: CustomResourceDefinition\n"                                     \
	"metadata: {name: widgets.example.com}\n"                              \
	"spec:\n"                                                              \
	"  group: example.com\n"                                               \
	"  names: {kind: Widget, plural: widgets}\n"                           \
	"  scope: Namespaced\n"                                                \
	"  versions:\n"                                                        \
	"  - name: v1\n"                                                       \
	"    served: true\n"                                                   \
	"    storage: true\n"                                                  \
	"    schema:\n"                                                        \
	"      openAPIV3Schema:\n"                                             \
	"        type: object\n"                                               \
	"        properties:\n"                                                \
	"          spec: {type: object, properties: {" field                   \
	": {type: string}}}\n"

#define WIDGET_CONTRACT(expr)                                                  \
	"apiVersion: telemetry.miloapis.com/v1alpha1\n"                        \
	"kind: MetricDefinition\n"                                             \
	"metadata: {name: widget-info}\n"                                      \
	"spec:\n"                                                              \
	"  resource: {group: example.com, kind: Widget}\n"                     \
	"  metric:\n"                                                          \
	"    name: example.com.widget.info\n"                                  \
	"    instrument: {type: Gauge, unit: \"1\"}\n"                         \
	"  labels: [{key: size}]\n"                                            \
	"---\n"                                                                \
	"apiVersion: telemetry.miloapis.com/v1alpha1\n"                        \
	"kind: MetricPolicy\n"                                                 \
	"metadata: {name: widget-info}\n"                                      \
	"spec:\n"                                                              \
	"  subject: {group: example.com, kind: Widget}\n"                      \
	"  targetMetric: {name: example.com.widget.info}\n"                    \
	"  source:\n"                                                          \
	"    type: ResourceFields\n"                                           \
	"    resourceFields:\n"                                                \
	"      seriesFrom:\n"                                                  \
	"        path: resource\n"                                             \
	"        value: {cel: \"1\"}\n"                                        \
	"        labels: {size: \"" expr "\"}\n"

TEST(check_subject_crd_schema_from_cluster)
{
	char cluster[256], man[256];
	char *out = NULL, *errs = NULL;
	struct run r;

	snprintf(cluster, sizeof(cluster), "%s/cluster", test__tmpdir());
	snprintf(man, sizeof(man), "%s/manifests", test__tmpdir());
	ASSERT_EQ(mkdir(cluster, 0755), 0);
	ASSERT_EQ(mkdir(man, 0755), 0);
	fake_cluster_dir = cluster;
	tc_write(cluster, "crd.yaml", WIDGET_CRD("size"));
	tc_write(man, "c.yaml", WIDGET_CONTRACT("resource.spec.sise"));

	/* the installed CRD: a typo is an error with the fix */
	ASSERT_EQ(check_fake(man, "fake.kubeconfig", &out, &errs), 1);
	ASSERT_TRUE(
		strstr(out,
		       "has no field sise in `resource.spec` (did you mean `resource.spec.size`?)"),
		"%s", out);
	ASSERT_TRUE(
		strstr(out,
		       "schemas: 1 CustomResourceDefinition(s) installed in the cluster https://fake:6443"),
		"%s", out);
	ASSERT_TRUE(
		strstr(out,
		       "subject example.com/Widget: the openAPIV3Schema of CustomResourceDefinition widgets.example.com version v1 ("),
		"%s", out);
	free(out);
	free(errs);

	/* without the cluster: a warning, exit 0 */
	r = check_path(man, false);
	ASSERT_EQ(r.rc, 0);
	ASSERT_OUT(r,
		   "the schema of subject example.com/Widget is unknown here");
	run_free(&r);

	/* the manifests' CRD wins over the installed one */
	tc_write(man, "crd.yaml", WIDGET_CRD("sise"));
	ASSERT_EQ(check_fake(man, "fake.kubeconfig", &out, &errs), 0);
	ASSERT_TRUE(strstr(out, "manifests/crd.yaml:1)"), "%s", out);
	free(out);
	free(errs);

	/* no CRD anywhere: a warning that says the cluster was asked */
	ASSERT_EQ(unlink(tc_write(man, "crd.yaml", "")), 0);
	tc_write(cluster, "crd.yaml", "");
	ASSERT_EQ(check_fake(man, "fake.kubeconfig", &out, &errs), 0);
	ASSERT_TRUE(strstr(out, "none installed in the cluster"), "%s", out);
	free(out);
	free(errs);

	/* an unreachable server: exit 2, its URL on stderr */
	ASSERT_EQ(check_fake(man, "down.kubeconfig", &out, &errs), 2);
	ASSERT_TRUE(
		strstr(errs,
		       "milometer: check: cannot reach the Kubernetes API server https://fake:6443"),
		"%s", errs);
	free(out);
	free(errs);

	/* a build without a cluster client says so */
	{
		const char *args[] = { "--manifests", man, "--kubeconfig",
				       "x" };

		ASSERT_EQ(tc_check(args, 4, &out, &errs), 2);
		ASSERT_TRUE(strstr(errs, "no Kubernetes client"), "%s", errs);
		free(out);
		free(errs);
	}
}
