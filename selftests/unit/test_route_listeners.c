// SPDX-License-Identifier: Apache-2.0
/*
 * Attribution per Gateway listener: a route attaches to the listeners its
 * parentRefs select (sectionName, port) that admit it (allowedRoutes
 * namespaces Same / All / Selector, kinds) and whose hostname intersects
 * its hostnames; a request is looked up only among the routes of the
 * listener port that accepted it, and within a port the most specific
 * listener hostname owns its hosts (listener isolation). `explain` picks
 * the listener from the URL's port or --listener and says why.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/cmd/cmd.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_contract_util.h"

/* The HTTP -> HTTPS redirect Gateway, both routes for the same host. */
static const char redirect_yaml[] =
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: Gateway\n"
	"metadata: {name: shop, namespace: t}\n"
	"spec:\n"
	"  gatewayClassName: eg\n"
	"  listeners:\n"
	"  - {name: http, protocol: HTTP, port: 80}\n"
	"  - {name: https, protocol: HTTPS, port: 443,"
	" tls: {certificateRefs: [{name: shop-cert}]}}\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: redirect, namespace: t,"
	" creationTimestamp: '2026-01-01T00:00:00Z'}\n"
	"spec:\n"
	"  parentRefs: [{name: shop, sectionName: http}]\n"
	"  hostnames: [shop.example.com]\n"
	"  rules:\n"
	"  - filters:\n"
	"    - type: RequestRedirect\n"
	"      requestRedirect: {scheme: https, statusCode: 301}\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: app, namespace: t,"
	" creationTimestamp: '2026-01-01T00:00:00Z'}\n"
	"spec:\n"
	"  parentRefs: [{name: shop, sectionName: https}]\n"
	"  hostnames: [shop.example.com]\n"
	"  rules: [{backendRefs: [{name: app, port: 8080}]}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: by-port, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: shop, port: 443}]\n"
	"  hostnames: [port.example.com]\n"
	"  rules: [{backendRefs: [{name: app, port: 8080}]}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: no-such-port, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: shop, port: 8443}]\n"
	"  rules: [{backendRefs: [{name: app, port: 8080}]}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: no-such-section, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: shop, sectionName: grpc}]\n"
	"  rules: [{backendRefs: [{name: app, port: 8080}]}]\n";

/*
 * Hostname intersection and isolation: on port 8000 a catch-all listener,
 * a wildcard, an exact one and an exact one nothing attaches to; on 9000
 * a wildcard alone.
 */
static const char hosts_yaml[] =
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: Gateway\n"
	"metadata: {name: iso, namespace: t}\n"
	"spec:\n"
	"  gatewayClassName: eg\n"
	"  listeners:\n"
	"  - {name: any, protocol: HTTP, port: 8000}\n"
	"  - {name: wild, protocol: HTTP, port: 8000,"
	" hostname: '*.example.com'}\n"
	"  - {name: exact, protocol: HTTP, port: 8000,"
	" hostname: a.example.com}\n"
	"  - {name: lonely, protocol: HTTP, port: 8000,"
	" hostname: lonely.example.com}\n"
	"  - {name: w9, protocol: HTTP, port: 9000,"
	" hostname: '*.example.com'}\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: r-any, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: iso, sectionName: any}]\n"
	"  hostnames: [a.example.com, b.example.com, other.test]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: r-wild, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: iso, sectionName: wild}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: r-exact, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: iso, sectionName: exact}]\n"
	"  hostnames: ['*.example.com']\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: r-w9, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: iso, sectionName: w9}]\n"
	"  hostnames: [x.y.example.com, example.com]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: r-miss, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: iso, sectionName: exact}]\n"
	"  hostnames: [zzz.example.com]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: r-owned, namespace: t}\n"
	"spec:\n"
	"  parentRefs: [{name: iso, sectionName: any}]\n"
	"  hostnames: [c.example.com]\n";

/* allowedRoutes per listener: Same, All, Selector, kinds. */
static const char allowed_yaml[] =
	"apiVersion: v1\n"
	"kind: Namespace\n"
	"metadata: {name: team-a, labels: {team: a}}\n"
	"---\n"
	"apiVersion: v1\n"
	"kind: Namespace\n"
	"metadata: {name: team-b, labels: {team: b}}\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: Gateway\n"
	"metadata: {name: gw, namespace: infra}\n"
	"spec:\n"
	"  gatewayClassName: eg\n"
	"  listeners:\n"
	"  - {name: same, protocol: HTTP, port: 81}\n"
	"  - {name: all, protocol: HTTP, port: 82,"
	" allowedRoutes: {namespaces: {from: All}}}\n"
	"  - name: sel\n"
	"    protocol: HTTP\n"
	"    port: 83\n"
	"    allowedRoutes:\n"
	"      namespaces: {from: Selector, selector: {matchLabels: {team: a}}}\n"
	"  - name: grpc-only\n"
	"    protocol: HTTP\n"
	"    port: 84\n"
	"    allowedRoutes:\n"
	"      namespaces: {from: All}\n"
	"      kinds: [{kind: GRPCRoute}]\n";

static const char *allowed_route(const char *name, const char *ns)
{
	static char buf[512];

	snprintf(buf, sizeof(buf),
		 "---\n"
		 "apiVersion: gateway.networking.k8s.io/v1\n"
		 "kind: HTTPRoute\n"
		 "metadata: {name: %s, namespace: %s}\n"
		 "spec:\n"
		 "  parentRefs: [{name: gw, namespace: infra}]\n",
		 name, ns);
	return buf;
}

/* Writes yaml to a file of its own directory and loads that directory. */
static struct gw_model *load(const char *name, const char *yaml, char *dir,
			     size_t dirlen)
{
	struct gw_model *m = gateway_api__new();
	char path[4096], err[512];
	FILE *f;

	snprintf(dir, dirlen, "%s/%s", test__tmpdir(), name);
	snprintf(path, sizeof(path), "mkdir -p '%s'", dir);
	if (system(path)) {
		test__fail(__FILE__, __LINE__, "mkdir %s", dir);
		gateway_api__free(m);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/m.yaml", dir);
	f = fopen(path, "w");
	if (!f || fputs(yaml, f) < 0 || fclose(f) ||
	    gateway_api__load_dir(m, dir, err, sizeof(err)) || m->nrejected) {
		test__fail(__FILE__, __LINE__, "manifests: %s %s", err,
			   m->nrejected ? m->rejected[0] : "");
		gateway_api__free(m);
		return NULL;
	}
	return m;
}

/* "ns/name rule N" or "unmatched", for a GET on listener port `port`. */
static const char *lookup(const struct route_table *t, uint32_t port,
			  const char *host, const char *path)
{
	static char out[256];
	char head[256];
	struct route_result res;
	struct http_req req;
	int n = snprintf(head, sizeof(head),
			 "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host);

	if (route_match__parse_head(head, (size_t)n, &req) ||
	    route_match__lookup(t, 0, port, &req, &res))
		return "lookup failed";
	if (res.route_id >= t->nroutes)
		return "unmatched";
	snprintf(out, sizeof(out), "%s/%s rule %u", t->routes[res.route_id].ns,
		 t->routes[res.route_id].name, res.rule_idx);
	return out;
}

static const char *lname(const struct gw_listener *l)
{
	return l ? l->name : "(none)";
}

static const char *detached_why(const struct route_table *t, const char *name)
{
	for (size_t i = 0; i < t->ndetached; i++)
		if (!strcmp(t->detached[i].src->name, name))
			return t->detached[i].why;
	return NULL;
}

static bool attached(const struct route_table *t, const char *name)
{
	for (size_t i = 0; i < t->nroutes; i++)
		if (!strcmp(t->routes[i].name, name))
			return true;
	return false;
}

TEST(route_listeners_section_and_port)
{
	struct gw_model *m;
	struct route_table *t = NULL;
	char dir[4096], err[512];
	const char *why;

	m = load("redirect", redirect_yaml, dir, sizeof(dir));
	if (!ASSERT_TRUE(m != NULL))
		return;
	if (!ASSERT_TRUE(!route_compile__build(m, "t/shop", 1, &t, err,
					       sizeof(err)),
			 "%s", err))
		return;
	/* two ports: each has its own vhosts, beside the merged set */
	ASSERT_EQ(t->slots[0].nports, 2);
	ASSERT_TRUE(route_compile__port_keyed(t, 0, 80));
	ASSERT_TRUE(route_compile__port_keyed(t, 0, 443));
	ASSERT_TRUE(!route_compile__port_keyed(t, 0, 8443));
	/* sectionName: the redirect on http, the application on https */
	ASSERT_STREQ(lookup(t, 80, "shop.example.com", "/cart"),
		     "t/redirect rule 0");
	ASSERT_STREQ(lookup(t, 443, "shop.example.com", "/cart"),
		     "t/app rule 0");
	/* every listener merged (a socket on no listener port): the tie-break */
	ASSERT_STREQ(lookup(t, 0, "shop.example.com", "/cart"), "t/app rule 0");
	/* parentRef port: the https listener only */
	ASSERT_STREQ(lookup(t, 443, "port.example.com", "/"),
		     "t/by-port rule 0");
	ASSERT_STREQ(lookup(t, 80, "port.example.com", "/"), "unmatched");
	why = detached_why(t, "no-such-port");
	ASSERT_TRUE(why && strstr(why, "parentRef port 8443"), "%s", why);
	why = detached_why(t, "no-such-section");
	ASSERT_TRUE(why && strstr(why, "no listener named grpc"), "%s", why);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_listeners_hostname_intersection)
{
	struct gw_model *m;
	struct route_table *t = NULL;
	char dir[4096], err[512];
	const char *why;

	m = load("hosts", hosts_yaml, dir, sizeof(dir));
	if (!ASSERT_TRUE(m != NULL))
		return;
	if (!ASSERT_TRUE(!route_compile__build(m, "t/iso", 1, &t, err,
					       sizeof(err)),
			 "%s", err))
		return;
	/* a.example.com is listener exact's, the most specific on 8000 */
	ASSERT_STREQ(lookup(t, 8000, "a.example.com", "/"), "t/r-exact rule 0");
	/* b.example.com is wild's: r-any's b.example.com is not attached */
	ASSERT_STREQ(lookup(t, 8000, "b.example.com", "/"), "t/r-wild rule 0");
	ASSERT_STREQ(lookup(t, 8000, "B.Example.COM:8000", "/"),
		     "t/r-wild rule 0");
	/* a route with no hostnames takes the listener's: one or more labels */
	ASSERT_STREQ(lookup(t, 8000, "q.r.example.com", "/"),
		     "t/r-wild rule 0");
	ASSERT_STREQ(lookup(t, 8000, "example.com", "/"), "unmatched");
	ASSERT_STREQ(lookup(t, 8000, "other.test", "/"), "t/r-any rule 0");
	/* a listener with no routes still owns its host on its port */
	ASSERT_STREQ(lookup(t, 8000, "lonely.example.com", "/"), "unmatched");
	/* route wildcard x listener exact: the listener's host */
	ASSERT_STREQ(lookup(t, 9000, "x.y.example.com", "/"), "t/r-w9 rule 0");
	/* listener *.example.com x route example.com: no intersection */
	ASSERT_STREQ(lookup(t, 9000, "example.com", "/"), "unmatched");
	/* only x.y.example.com of r-w9; 9000 has nothing else */
	ASSERT_STREQ(lookup(t, 9000, "b.example.com", "/"), "unmatched");
	ASSERT_STREQ(lookup(t, 9000, "other.test", "/"), "unmatched");
	/* port 8000's routes are not port 9000's */
	ASSERT_STREQ(lookup(t, 9000, "a.example.com", "/"), "unmatched");
	why = detached_why(t, "r-miss");
	ASSERT_TRUE(why && strstr(why, "no hostname intersects listener "
				       "exact's hostname a.example.com"),
		    "%s", why);
	why = detached_why(t, "r-owned");
	ASSERT_TRUE(why && strstr(why, "listener wild"), "%s", why);
	ASSERT_TRUE(!attached(t, "r-owned"));
	/* the listener a request lands on, as explain names it */
	ASSERT_STREQ(lname(route_compile__listener_for(m->gateways[0], 8000,
						       "a.example.com")),
		     "exact");
	ASSERT_STREQ(lname(route_compile__listener_for(m->gateways[0], 8000,
						       "z.example.com")),
		     "wild");
	ASSERT_STREQ(lname(route_compile__listener_for(m->gateways[0], 8000,
						       "other.test")),
		     "any");
	ASSERT_TRUE(route_compile__listener_for(m->gateways[0], 9000,
						"other.test") == NULL);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_listeners_allowed_routes)
{
	char yaml[8192], dir[4096], err[512];
	struct route_table *t = NULL;
	struct gw_model *m;
	const char *why;

	snprintf(yaml, sizeof(yaml), "%s", allowed_yaml);
	strcat(yaml, allowed_route("in-infra", "infra"));
	strcat(yaml, allowed_route("in-a", "team-a"));
	strcat(yaml, allowed_route("in-b", "team-b"));
	strcat(yaml, allowed_route("in-unknown", "nowhere"));
	m = load("allowed", yaml, dir, sizeof(dir));
	if (!ASSERT_TRUE(m != NULL))
		return;
	if (!ASSERT_TRUE(!route_compile__build(m, "infra/gw", 1, &t, err,
					       sizeof(err)),
			 "%s", err))
		return;
	/* Same: infra only; All: everyone; Selector team=a: team-a */
	ASSERT_STREQ(lookup(t, 81, "h.test", "/"), "infra/in-infra rule 0");
	ASSERT_STREQ(lookup(t, 82, "h.test", "/"), "infra/in-infra rule 0");
	ASSERT_STREQ(lookup(t, 83, "h.test", "/"), "team-a/in-a rule 0");
	/* kinds without HTTPRoute: nothing */
	ASSERT_STREQ(lookup(t, 84, "h.test", "/"), "unmatched");
	/* a route attached where it is admitted only */
	ASSERT_TRUE(attached(t, "in-b"));
	ASSERT_TRUE(attached(t, "in-unknown"));
	{
		/* in-b: only listener all takes it (82), in-a: all and sel */
		struct gw_model *m2 = m;
		char head[] = "GET / HTTP/1.1\r\nHost: h.test\r\n\r\n";
		struct route_result res;
		struct http_req req;

		(void)m2;
		ASSERT_EQ(route_match__parse_head(head, sizeof(head) - 1, &req),
			  0);
		ASSERT_EQ(route_match__lookup(t, 0, 82, &req, &res), 0);
		/* all four on 82, same age: name order, infra/... first */
		ASSERT_STREQ(t->routes[res.route_id].name, "in-infra");
	}
	route_compile__free(t);
	gateway_api__free(m);

	/* each namespace alone, to see every listener's verdict */
	snprintf(yaml, sizeof(yaml), "%s%s", allowed_yaml,
		 allowed_route("in-b", "team-b"));
	m = load("allowed-b", yaml, dir, sizeof(dir));
	if (!ASSERT_TRUE(m != NULL))
		return;
	if (!ASSERT_TRUE(!route_compile__build(m, "infra/gw", 1, &t, err,
					       sizeof(err)),
			 "%s", err))
		return;
	ASSERT_STREQ(lookup(t, 81, "h.test", "/"), "unmatched");
	ASSERT_STREQ(lookup(t, 82, "h.test", "/"), "team-b/in-b rule 0");
	ASSERT_STREQ(lookup(t, 83, "h.test", "/"), "unmatched");
	route_compile__free(t);
	gateway_api__free(m);

	snprintf(yaml, sizeof(yaml), "%s%s", allowed_yaml,
		 allowed_route("in-unknown", "nowhere"));
	/* from All is the only listener that admits it; drop that one */
	{
		char *all = strstr(yaml, "  - {name: all");
		char *eol = all ? strchr(all, '\n') : NULL;

		if (!ASSERT_TRUE(eol != NULL))
			return;
		memmove(all, eol + 1, strlen(eol + 1) + 1);
	}
	m = load("allowed-none", yaml, dir, sizeof(dir));
	if (!ASSERT_TRUE(m != NULL))
		return;
	if (!ASSERT_TRUE(!route_compile__build(m, "infra/gw", 1, &t, err,
					       sizeof(err)),
			 "%s", err))
		return;
	ASSERT_TRUE(!attached(t, "in-unknown"));
	why = detached_why(t, "in-unknown");
	ASSERT_TRUE(why && strstr(why, "listener same takes routes from "
				       "namespace infra only"),
		    "%s", why);
	route_compile__free(t);
	gateway_api__free(m);
}

/* Run explain with memory streams; returns its exit status. */
static int explain(char **out, char **errs, const char *const *args)
{
	char *argv[32];
	size_t olen, elen;
	FILE *o = open_memstream(out, &olen);
	FILE *e = open_memstream(errs, &elen);
	int argc = 0, ret;

	argv[argc++] = "explain";
	while (*args && argc < 31)
		argv[argc++] = (char *)*args++;
	argv[argc] = NULL;
	test_log_to(e);
	ret = explain__run(argc, argv, o, e);
	test_log_to(NULL);
	fclose(o);
	fclose(e);
	return ret;
}

TEST(route_listeners_explain)
{
	char dir[4096];
	struct gw_model *m = load("explain", redirect_yaml, dir, sizeof(dir));
	const struct {
		const char *args[8];
		int ret;
		const char *first, *has; /* first line, substring of stdout */
	} c[] = {
		{ { "http://shop.example.com/cart" },
		  0,
		  "t/redirect rule 0",
		  "listener http of t/shop (port 80): the URL scheme's port 80" },
		{ { "https://shop.example.com/cart" },
		  0,
		  "t/app rule 0",
		  "listener https of t/shop (port 443): the URL scheme's port "
		  "443" },
		{ { "http://shop.example.com:443/cart" },
		  0,
		  "t/app rule 0",
		  "the URL's port 443" },
		{ { "--listener", "https", "http://shop.example.com/cart" },
		  0,
		  "t/app rule 0",
		  "listener https of t/shop (port 443): "
		  "--listener" },
		{ { "--gateway", "t/shop", "-H", "Host: shop.example.com:80",
		    "/cart" },
		  0,
		  "t/redirect rule 0",
		  "the URL's port 80" },
		{ { "http://shop.example.com:8080/cart" },
		  0,
		  "t/app rule 0",
		  "none of the Gateways on port 8080 takes host "
		  "\"shop.example.com\"; looked up in the routes of every "
		  "listener merged" },
		{ { "https://port.example.com/" }, 0, "t/by-port rule 0", "" },
		{ { "http://port.example.com/" }, 0, "unmatched", "" },
	};

	if (!ASSERT_TRUE(m != NULL))
		return;
	gateway_api__free(m);
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		const char *args[12] = { "--manifests", dir };
		char *out = NULL, *errs = NULL;
		size_t n = 2;
		int ret;
		bool ok;

		for (size_t k = 0; c[i].args[k]; k++)
			args[n++] = c[i].args[k];
		ret = explain(&out, &errs, args);
		ok = ret == c[i].ret &&
		     !strncmp(out, c[i].first, strlen(c[i].first)) &&
		     out[strlen(c[i].first)] == '\n' && strstr(out, c[i].has);
		if (!ok)
			test__fail(__FILE__, __LINE__,
				   "explain case %zu: ret %d\nstdout: %s\n"
				   "stderr: %s",
				   i, ret, out, errs);
		free(out);
		free(errs);
		if (!ok)
			return;
	}
	{
		const char *args[] = { "--manifests",
				       dir,
				       "--listener",
				       "grpc",
				       "http://shop.example.com/",
				       NULL };
		char *out = NULL, *errs = NULL;

		ASSERT_EQ(explain(&out, &errs, args), 2);
		ASSERT_TRUE(strstr(errs, "no listener named \"grpc\""), "%s",
			    errs);
		free(out);
		free(errs);
	}
}

/* The Gateway's Service says which container port serves each listener. */
TEST(route_listeners_service_ports)
{
	static const char svc[] =
		"---\n"
		"apiVersion: v1\n"
		"kind: Service\n"
		"metadata:\n"
		"  name: envoy-t-shop-1a2b3c\n"
		"  namespace: envoy-gateway-system\n"
		"  labels:\n"
		"    gateway.envoyproxy.io/owning-gateway-name: shop\n"
		"    gateway.envoyproxy.io/owning-gateway-namespace: t\n"
		"spec:\n"
		"  ports:\n"
		"  - {name: http-80, port: 80, targetPort: 10080}\n"
		"  - {name: https-443, port: 443, targetPort: https}\n"
		"---\n"
		"apiVersion: v1\n"
		"kind: Service\n"
		"metadata: {name: app, namespace: t}\n"
		"spec: {ports: [{port: 443, targetPort: 9999}]}\n"
		"---\n"
		"apiVersion: v1\n"
		"kind: Service\n"
		"metadata:\n"
		"  name: shop-gw\n"
		"  namespace: t\n"
		"  labels: {gateway.networking.k8s.io/gateway-name: shop}\n"
		"spec: {ports: [{port: 443, targetPort: 10443}, {port: 8443}]}\n";
	char yaml[8192], dir[4096], err[512];
	struct route_table *t = NULL;
	struct gw_model *m;

	snprintf(yaml, sizeof(yaml), "%s%s", redirect_yaml, svc);
	m = load("services", yaml, dir, sizeof(dir));
	if (!ASSERT_TRUE(m != NULL))
		return;
	ASSERT_EQ(m->nservices, 2); /* the one naming no Gateway is skipped */
	if (!ASSERT_TRUE(!route_compile__build(m, "t/shop", 1, &t, err,
					       sizeof(err)),
			 "%s", err))
		return;
	ASSERT_EQ(t->slots[0].nports, 2);
	for (size_t i = 0; i < t->slots[0].nports; i++) {
		/* 80 from Envoy Gateway's labels; 443's named targetPort is
		 * unknown there, the other Service's number is taken */
		ASSERT_EQ(t->slots[0].sports[i],
			  t->slots[0].ports[i] == 80 ? 10080 : 10443);
	}
	route_compile__free(t);
	gateway_api__free(m);
}

/*
 * `check` and the route table select listeners with one function: on a
 * Gateway where sectionName, port, hostname intersection, listener
 * isolation and allowedRoutes all decide, check's Accepted per parentRef
 * is exactly whether the table attached the route, and to the listeners
 * requests are then looked up in.
 */
static const char agree_yaml[] =
	"apiVersion: v1\n"
	"kind: Namespace\n"
	"metadata: {name: t, labels: {env: prod}}\n"
	"---\n"
	"apiVersion: v1\n"
	"kind: Namespace\n"
	"metadata: {name: u}\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: Gateway\n"
	"metadata: {name: gw, namespace: infra}\n"
	"spec:\n"
	"  gatewayClassName: eg\n"
	"  listeners:\n"
	"  - {name: http, protocol: HTTP, port: 80, hostname: '*.example.com',"
	" allowedRoutes: {namespaces: {from: All}}}\n"
	"  - {name: shop, protocol: HTTP, port: 80, hostname: shop.example.com}\n"
	"  - name: https\n"
	"    protocol: HTTPS\n"
	"    port: 443\n"
	"    hostname: '*.example.com'\n"
	"    tls: {certificateRefs: [{name: cert}]}\n"
	"    allowedRoutes:\n"
	"      namespaces: {from: Selector, selector: {matchLabels: {env: prod}}}\n"
	"  - name: grpc\n"
	"    protocol: HTTP\n"
	"    port: 8080\n"
	"    allowedRoutes:\n"
	"      namespaces: {from: All}\n"
	"      kinds: [{kind: GRPCRoute}]\n";

static const char *agree_route(const char *name, const char *ns,
			       const char *parent, const char *hosts)
{
	static char buf[512];

	snprintf(buf, sizeof(buf),
		 "---\n"
		 "apiVersion: gateway.networking.k8s.io/v1\n"
		 "kind: HTTPRoute\n"
		 "metadata: {name: %s, namespace: %s}\n"
		 "spec:\n"
		 "  parentRefs: [{name: gw, namespace: infra%s}]\n"
		 "  hostnames: [%s]\n"
		 "  rules: [{backendRefs: [{name: app, port: 8080}]}]\n",
		 name, ns, parent, hosts);
	return buf;
}

/* check's Accepted condition line of route ns/name's only parentRef. */
static const char *check_accepted(const char *out, const char *ns,
				  const char *name)
{
	static char line[512];
	char head[128];
	const char *at, *acc, *end;

	snprintf(head, sizeof(head), " HTTPRoute %s/%s\n", ns, name);
	at = strstr(out, head);
	acc = at ? strstr(at, "Accepted ") : NULL;
	end = acc ? strchr(acc, '\n') : NULL;
	if (!end)
		return "(absent)";
	snprintf(line, sizeof(line), "%.*s", (int)(end - acc), acc);
	return line;
}

TEST(route_listeners_check_agrees_with_table)
{
	static const struct {
		const char *name, *ns, *parent, *hosts;
		const char *reason; /* check's Accepted reason */
		uint32_t port;      /* where the table should route it */
		const char *host;
	} cases[] = {
		/* shop.example.com on port 80 is listener shop's (isolation) */
		{ "isolated", "t", ", sectionName: http", "shop.example.com",
		  "NoMatchingListenerHostname", 0, NULL },
		/* port 443: the Selector admits t; other.org intersects nothing */
		{ "by-port", "t", ", port: 443", "a.example.com, other.org",
		  "Accepted", 443, "a.example.com" },
		{ "not-selected", "u", ", port: 443", "b.example.com",
		  "NotAllowedByListeners", 0, NULL },
		/* sectionName shop is on port 80, not 443 */
		{ "section-port", "t", ", sectionName: shop, port: 443",
		  "c.example.com", "NoMatchingParent", 0, NULL },
		/* http takes it; shop (Same: infra only) does not */
		{ "wild", "u", ", port: 80", "'*.example.com'", "Accepted", 80,
		  "d.example.com" },
		{ "kinds", "t", ", port: 8080", "e.example.com",
		  "NotAllowedByListeners", 0, NULL },
	};
	char dir[4096], yaml[8192];
	struct route_table *t = NULL;
	struct gw_model *m;
	const char *args[2];
	char *out = NULL, *errs = NULL, err[256];
	size_t off;

	off = (size_t)snprintf(yaml, sizeof(yaml), "%s", agree_yaml);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		off += (size_t)snprintf(yaml + off, sizeof(yaml) - off, "%s",
					agree_route(cases[i].name, cases[i].ns,
						    cases[i].parent,
						    cases[i].hosts));
	m = load("agree", yaml, dir, sizeof(dir));
	ASSERT_TRUE(m);
	ASSERT_EQ(route_compile__build(m, "infra/gw", 1, &t, err, sizeof(err)),
		  0);
	args[0] = "--manifests";
	args[1] = dir;
	ASSERT_EQ(tc_check(args, 2, &out, &errs), 1);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *acc =
			check_accepted(out, cases[i].ns, cases[i].name);
		bool ok = !strcmp(cases[i].reason, "Accepted");

		ASSERT_TRUE(strstr(acc, cases[i].reason), "%s: %s in:\n%s",
			    cases[i].name, acc, out);
		/* the same verdict from the table the agent loads */
		ASSERT_EQ(attached(t, cases[i].name), ok);
		if (ok) {
			char want[128];

			snprintf(want, sizeof(want), "%s/%s rule 0",
				 cases[i].ns, cases[i].name);
			ASSERT_STREQ(lookup(t, cases[i].port, cases[i].host,
					    "/"),
				     want);
		}
	}
	/* check names the listener the table put each route on */
	ASSERT_TRUE(strstr(check_accepted(out, "t", "by-port"),
			   "Attached to listener(s) https."));
	ASSERT_TRUE(strstr(check_accepted(out, "u", "wild"),
			   "Attached to listener(s) http."));
	ASSERT_TRUE(strstr(
		check_accepted(out, "t", "isolated"),
		"are listener shop's (shop.example.com, more specific, same port 80)"));
	/* and the isolated host on port 80 is not looked up in http's routes */
	ASSERT_STREQ(lookup(t, 80, "shop.example.com", "/"), "unmatched");
	free(out);
	free(errs);
	route_compile__free(t);
	gateway_api__free(m);
}
