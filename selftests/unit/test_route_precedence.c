// SPDX-License-Identifier: Apache-2.0
/*
 * Gateway API precedence, case by case, on testdata/routes/precedence:
 * each request goes through route_match__parse_head() and
 * route_match__lookup(); we check the route/rule and whether the BPF table
 * decides it or defers to user space. lookup itself fails with -EPROTO if
 * the kernel table's answer and the Gateway API walk ever disagree.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/unit/test.h"
#include "selftests/unit/test_route_data.h"

#define PRECEDENCE_DIR route_testdata()

enum bpf_says { KERNEL, DEFER };

struct rcase {
	const char *what;
	const char *method, *host, *target, *headers;
	const char *want; /* "ns/name rule N" or "unmatched" */
	enum bpf_says bpf;
};

static const struct rcase cases[] = {
	/* Hostnames */
	{ "exact vhost", "GET", "www.example.com", "/x", "",
	  "apps/login rule 1", KERNEL },
	{ "port in Host ignored", "GET", "www.example.com:8080", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "host case-insensitive", "GET", "WWW.Example.COM", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "trailing dot", "GET", "www.example.com.", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "route hostname lower-cased", "GET", "api.example.com", "/v1/a", "",
	  "apps/apihost rule 0", KERNEL },
	{ "wildcard one label", "GET", "foo.example.com", "/x", "",
	  "apps/wild rule 0", KERNEL },
	{ "wildcard two labels", "GET", "a.b.example.com", "/", "",
	  "apps/wild rule 0", KERNEL },
	{ "longer wildcard wins", "GET", "x.eu.example.com", "/", "",
	  "apps/deepwild rule 0", KERNEL },
	{ "longer wildcard, two labels", "GET", "a.b.eu.example.com", "/", "",
	  "apps/deepwild rule 0", KERNEL },
	{ "wildcard never the apex", "GET", "eu.example.com", "/", "",
	  "apps/wild rule 0", KERNEL },
	{ "apex not in *.example.com", "GET", "example.com", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "no fallback from exact vhost", "GET", "api.example.com", "/other",
	  "", "unmatched", KERNEL },
	{ "catch-all vhost", "GET", "unknown.org", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "catch-all, no rule", "GET", "unknown.org", "/foo", "", "unmatched",
	  KERNEL },
	{ "sectionName keeps catch-all off *.example.com", "GET",
	  "foo.example.com", "/healthz", "", "apps/wild rule 0", KERNEL },
	{ "allowedRoutes Same: same namespace attached", "GET", "same.test",
	  "/other", "", "infra/samens rule 0", KERNEL },
	{ "allowedRoutes Selector: namespace not selected", "GET", "sel.test",
	  "/", "", "unmatched", KERNEL },
	{ "allowedRoutes Selector: matchLabels selects", "GET", "sel.test",
	  "/ok", "", "teama/selok rule 0", KERNEL },
	{ "allowedRoutes Selector: matchExpressions select", "GET",
	  "selx.test", "/db", "", "teama/selx rule 0", KERNEL },
	{ "HTTPS listener", "GET", "secure.test", "/a", "",
	  "apps/secure rule 0", KERNEL },
	{ "no intersection: not attached", "GET", "other.org", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "empty first label", "GET", ".example.com", "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	{ "no Host header", "GET", NULL, "/healthz", "",
	  "apps/catchall rule 0", KERNEL },
	/* Paths */
	{ "Exact beats PathPrefix", "GET", "www.example.com", "/login", "",
	  "apps/login rule 0", KERNEL },
	{ "Exact needs the whole path", "GET", "www.example.com", "/login/",
	  "", "apps/login rule 1", KERNEL },
	{ "query is not part of the path", "GET", "www.example.com",
	  "/login?next=/", "", "apps/login rule 0", KERNEL },
	{ "longest prefix", "GET", "www.example.com", "/api/v2/users", "",
	  "apps/api rule 1", KERNEL },
	{ "prefix trailing slash ignored", "GET", "www.example.com", "/api/v2",
	  "", "apps/api rule 1", KERNEL },
	{ "prefix with trailing slash", "GET", "www.example.com", "/api/v2/",
	  "", "apps/api rule 1", KERNEL },
	{ "element-wise: /api/v2x", "POST", "www.example.com", "/api/v2x",
	  "", "apps/api rule 2", KERNEL },
	{ "element-wise: /apix is not /api", "GET", "www.example.com",
	  "/apix", "", "apps/login rule 1", KERNEL },
	{ "paths case-sensitive", "GET", "www.example.com", "/Api/x", "",
	  "apps/api rule 6", KERNEL },
	{ "paths case-sensitive 2", "GET", "www.example.com", "/API", "",
	  "apps/login rule 1", KERNEL },
	/* Method, headers, query */
	{ "method beats headers", "POST", "www.example.com", "/api/x",
	  "X-Canary: true\r\nX-Env: prod\r\n", "apps/api rule 2", KERNEL },
	{ "two headers beat one", "GET", "www.example.com", "/api/x",
	  "x-env: prod\r\nx-canary: true\r\n", "apps/api rule 3", DEFER },
	{ "header names case-insensitive", "GET", "www.example.com", "/api",
	  "X-CANARY: true\r\n", "apps/api rule 4", DEFER },
	{ "header values case-sensitive", "GET", "www.example.com", "/api",
	  "X-Canary: TRUE\r\n", "apps/api rule 0", DEFER },
	{ "header beats query", "GET", "www.example.com", "/api/q?debug=1",
	  "X-Canary: true\r\n", "apps/api rule 4", DEFER },
	{ "query match", "GET", "www.example.com", "/api/q?a=2&debug=1", "",
	  "apps/api rule 5", DEFER },
	{ "query names case-sensitive", "GET", "www.example.com",
	  "/api/q?DEBUG=1", "", "apps/api rule 0", DEFER },
	{ "query first occurrence", "GET", "www.example.com",
	  "/api/q?debug=2&debug=1", "", "apps/api rule 0", DEFER },
	{ "plain rule after conditional ones", "GET", "www.example.com",
	  "/api/x", "", "apps/api rule 0", DEFER },
	{ "header regex", "GET", "www.example.com", "/api/re",
	  "X-Ver: v12\r\n", "apps/api rule 7", DEFER },
	{ "header regex is a full match", "GET", "www.example.com", "/api/re",
	  "X-Ver: v12b\r\n", "apps/api rule 0", DEFER },
	/* Ties */
	{ "oldest route", "GET", "www.example.com", "/shared/a", "",
	  "apps/older rule 0", KERNEL },
	{ "same age: alphabetical", "GET", "www.example.com", "/tie", "",
	  "apps/a-tie rule 0", KERNEL },
	{ "timestamp beats none", "GET", "www.example.com", "/notime", "",
	  "apps/d-time rule 0", KERNEL },
	{ "first rule in the route", "GET", "www.example.com", "/dup/x", "",
	  "apps/login rule 2", KERNEL },
	/* RegularExpression paths: Exact > regex (longer first) > Prefix */
	{ "regex: Exact still first", "GET", "re.example.com",
	  "/items/special", "", "apps/regex rule 2", KERNEL },
	{ "regex beats prefix", "GET", "re.example.com", "/items/42", "",
	  "apps/regex rule 0", DEFER },
	{ "longer regex first", "GET", "re.example.com", "/items/42/detail",
	  "", "apps/regex rule 3", DEFER },
	{ "regex full match, prefix decides", "GET", "re.example.com",
	  "/items/42x", "", "apps/regex rule 1", DEFER },
	{ "regex vhost, unmatched", "GET", "re.example.com", "/itemsx", "",
	  "unmatched", DEFER },
	/* Candidate list overflow (9 methods for one prefix) */
	{ "overflow: early method in BPF", "GET", "many.test", "/m", "",
	  "apps/many rule 0", KERNEL },
	{ "overflow: 7th method in BPF", "OPTIONS", "many.test", "/m", "",
	  "apps/many rule 6", KERNEL },
	{ "overflow: sentinel defers", "PATCH", "many.test", "/m/x", "",
	  "apps/many rule 8", DEFER },
	{ "overflow: sentinel defers 2", "TRACE", "many.test", "/m", "",
	  "apps/many rule 7", DEFER },
	{ "unknown method: no method rule fits", "PROPFIND", "many.test",
	  "/m", "", "unmatched", DEFER },
	{ "second match of a rule", "POST", "many.test", "/x", "",
	  "apps/many rule 9", KERNEL },
	/* Deep prefixes: BPF defers only when the path is deeper still */
	{ "deep vhost, shallow path", "GET", "deep.test", "/a/b", "",
	  "apps/deep rule 0", KERNEL },
	{ "deep prefix, path equal to it", "GET", "deep.test",
	  "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16", "", "apps/deep rule 1",
	  KERNEL },
	{ "deep prefix, deeper path", "GET", "deep.test",
	  "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/16/17", "",
	  "apps/deep rule 1", DEFER },
	{ "deep vhost, deep path, no match", "GET", "deep.test",
	  "/1/2/3/4/5/6/7/8/9/10/11/12/13/14/15/x/17", "", "unmatched",
	  DEFER },
	/* What BPF leaves to user space before any lookup */
	{ "asterisk-form target", "OPTIONS", "www.example.com", "*", "",
	  "unmatched", DEFER },
	{ "absolute-form target", "GET", "ignored.test",
	  "http://www.example.com/login", "", "apps/login rule 0", DEFER },
	{ "Host longer than MM_HOST_MAX", "GET",
	  "a123456789a123456789a123456789a123456789a123456789a123456789"
	  "a123456789a123456789a123456789a123456789a123456789a123456789"
	  ".example.com", "/", "", "apps/wild rule 0", DEFER },
};

static struct gw_model *load(const char *dir, struct route_table **t,
			     const char *gw)
{
	struct gw_model *m = gateway_api__new();
	char err[512];

	*t = NULL;
	if (!m)
		return NULL;
	if (gateway_api__load_dir(m, dir, err, sizeof(err)) ||
	    route_compile__build(m, gw, 7, t, err, sizeof(err))) {
		test_log("load %s: %s\n", dir, err);
		gateway_api__free(m);
		return NULL;
	}
	return m;
}

static void answer(const struct route_table *t, const struct route_result *r,
		   char *buf, size_t len)
{
	if (r->route_id == MM_ROUTE_UNMATCHED)
		snprintf(buf, len, "unmatched");
	else
		snprintf(buf, len, "%s/%s rule %u", t->routes[r->route_id].ns,
			 t->routes[r->route_id].name, r->rule_idx);
}

TEST(route_precedence_cases)
{
	struct route_table *t;
	struct gw_model *m = load(PRECEDENCE_DIR, &t, "infra/gw");
	size_t failed = 0;

	ASSERT_TRUE(m != NULL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct rcase *c = &cases[i];
		struct route_result res;
		struct http_req req;
		char head[1024], got[256];
		int n, err;

		n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\n%s%s%s%s\r\n",
			     c->method, c->target, c->host ? "Host: " : "",
			     c->host ? c->host : "", c->host ? "\r\n" : "",
			     c->headers);
		ASSERT_TRUE(n > 0 && (size_t)n < sizeof(head));
		ASSERT_EQ(route_match__parse_head(head, (size_t)n, &req), 0);
		err = route_match__lookup(t, 0, 0, &req, &res);
		answer(t, &res, got, sizeof(got));
		if (err || strcmp(got, c->want) ||
		    res.deferred != (c->bpf == DEFER)) {
			failed++;
			test__fail(__FILE__, __LINE__,
				   "case \"%s\": got \"%s\" (%s, err %d), want "
				   "\"%s\" (%s)\n%s", c->what, got,
				   res.deferred ? "deferred" : "kernel", err,
				   c->want, c->bpf == DEFER ? "deferred" : "kernel",
				   res.why);
		}
		/* What BPF records: the decision itself, or DEFER. */
		if (!res.deferred && res.bpf_route_id != res.route_id)
			failed++;
		if (res.deferred && res.bpf_route_id != MM_ROUTE_DEFER)
			failed++;
	}
	ASSERT_EQ(failed, 0);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_precedence_table_shape)
{
	struct route_table *t;
	struct gw_model *m = load(PRECEDENCE_DIR, &t, "infra/gw");
	const struct mm_route_cands *many = NULL;
	bool has_regex_flag = false;

	ASSERT_TRUE(m != NULL);
	/* header, query and regex matches: user space finishes some */
	ASSERT_TRUE(route_compile__defers(t));
	/* Not attached: othns, sel, nomatch (hostnames), elsewhere (gw). */
	for (size_t i = 0; i < t->nroutes; i++) {
		ASSERT_TRUE(strcmp(t->routes[i].name, "othns") &&
			    strcmp(t->routes[i].name, "sel") &&
			    strcmp(t->routes[i].name, "selxdb") &&
			    strcmp(t->routes[i].name, "nomatch") &&
			    strcmp(t->routes[i].name, "elsewhere"),
			    "%s attached", t->routes[i].name);
		ASSERT_STREQ(t->routes[i].gw_name, "gw");
		/* Route ids are "{namespace}/{name}" order. */
		if (i)
			ASSERT_TRUE(strcmp(t->routes[i - 1].ns,
					   t->routes[i].ns) < 0 ||
				    (!strcmp(t->routes[i - 1].ns, t->routes[i].ns) &&
				     strcmp(t->routes[i - 1].name,
					    t->routes[i].name) < 0));
	}
	ASSERT_EQ(t->nroutes, 19);
	/* Why the ones that refer to gw are not attached. */
	ASSERT_EQ(t->ndetached, 4);
	for (size_t i = 0; i < t->ndetached; i++) {
		const char *n = t->detached[i].src->name;
		const char *want =
			!strcmp(n, "othns") ? "listener same-only takes routes "
				"from namespace infra only (allowedRoutes from "
				"Same)" :
			!strcmp(n, "sel") ? "listener selector: namespace apps "
				"does not match allowedRoutes.namespaces.selector" :
			!strcmp(n, "selxdb") ? "listener selexpr: namespace "
				"teamb does not match" :
			!strcmp(n, "nomatch") ? "no hostname intersects "
				"listener wild's hostname *.example.com" : "?";

		ASSERT_TRUE(!strncmp(t->detached[i].why, want, strlen(want)),
			    "%s: %s", n, t->detached[i].why);
	}
	ASSERT_EQ(m->skipped, 2); /* MetricDefinition, Service */
	for (size_t k = 0; k < t->nvhost_keys; k++) {
		ASSERT_EQ(t->vhost_keys[k].gen, 7);
		if (t->vhost_vals[k].flags & MM_VHOST_HAS_REGEX) {
			ASSERT_STREQ(t->vhosts[t->vhost_vals[k].vhost_id].host,
				     "re.example.com");
			has_regex_flag = true;
		}
	}
	ASSERT_TRUE(has_regex_flag);
	/* Keys as BPF computes them from the Host header. */
	for (size_t k = 0; k < t->nvhost_keys; k++) {
		const char *h = t->vhosts[t->vhost_vals[k].vhost_id].host;
		const struct mm_vhost_key *vk = &t->vhost_keys[k];

		if (!strcmp(h, "*.example.com"))
			ASSERT_TRUE(vk->kind == MM_VH_WILDCARD &&
				    vk->hash == route_compile__hash(
					    "example.com", 11));
		else if (!strcmp(h, "www.example.com"))
			ASSERT_TRUE(vk->kind == MM_VH_EXACT &&
				    vk->hash == route_compile__hash(
					    "www.example.com", 15));
		else if (!h[0])
			ASSERT_TRUE(vk->kind == MM_VH_CATCHALL && !vk->hash);
	}
	for (size_t v = 0; v < t->nvhosts; v++)
		ASSERT_EQ(!!(t->vhosts[v].flags & MM_VHOST_DEEP),
			  !strcmp(t->vhosts[v].host, "deep.test"));
	for (size_t k = 0; k < t->nroute_keys; k++) {
		const struct mm_route_key *key = &t->route_keys[k];

		ASSERT_EQ(key->gen, 7);
		ASSERT_TRUE(t->route_cands[k].n >= 1 &&
			    t->route_cands[k].n <= MM_ROUTE_CANDS);
		if (!strcmp(t->vhosts[key->vhost_id].host, "many.test") &&
		    key->kind == MM_PATH_PREFIX &&
		    key->hash == route_compile__hash("/m", 2))
			many = &t->route_cands[k];
		/* apps/b-tie can never be reached after apps/a-tie: dropped */
		if (!strcmp(t->vhosts[key->vhost_id].host, "www.example.com") &&
		    key->kind == MM_PATH_PREFIX &&
		    key->hash == route_compile__hash("/tie", 4))
			ASSERT_EQ(t->route_cands[k].n, 1);
		/* "/" is stored as the empty prefix. */
		if (!strcmp(t->vhosts[key->vhost_id].host, "www.example.com") &&
		    key->kind == MM_PATH_PREFIX &&
		    key->hash == MM_FNV_OFFSET)
			ASSERT_EQ(t->route_cands[k].c[0].rule_idx, 1);
	}
	ASSERT_TRUE(many != NULL);
	ASSERT_EQ(many->n, MM_ROUTE_CANDS);
	ASSERT_EQ(many->c[7].route_id, MM_ROUTE_DEFER);
	ASSERT_EQ(many->c[7].method, MM_M_ANY);
	ASSERT_EQ(many->c[7].flags, MM_CAND_NEEDS_USER);
	ASSERT_EQ(many->c[6].method, MM_M_OPTIONS);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_precedence_all_gateways)
{
	struct route_table *t;
	struct gw_model *m = load(PRECEDENCE_DIR, &t, NULL);
	struct route_result res;
	struct http_req req;
	static const char head[] = "GET /login HTTP/1.1\r\n"
				   "Host: www.example.com\r\n\r\n";

	ASSERT_TRUE(m != NULL);
	/* Merged with other-gw, apps/elsewhere (no timestamp) also has
	 * Exact /login: apps/login has one, so it is older and wins. */
	ASSERT_EQ(route_match__parse_head(head, sizeof(head) - 1, &req), 0);
	ASSERT_EQ(route_match__lookup(t, 0, 0, &req, &res), 0);
	ASSERT_STREQ(t->routes[res.route_id].name, "login");
	ASSERT_TRUE(strstr(res.why, "oldest route wins") != NULL, "%s",
		    res.why);
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_precedence_unknown_gateway)
{
	struct gw_model *m = gateway_api__new();
	struct route_table *t = NULL;
	char err[256];

	ASSERT_EQ(gateway_api__load_dir(m, PRECEDENCE_DIR, err, sizeof(err)),
		  0);
	ASSERT_EQ(route_compile__build(m, "infra/nope", 1, &t, err,
				       sizeof(err)), -ENOENT);
	ASSERT_TRUE(strstr(err, "infra/nope") != NULL, "%s", err);
	ASSERT_EQ(route_compile__build(m, "nope", 1, &t, err, sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(t == NULL);
	gateway_api__free(m);
}
