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
#include "selftests/unit/test_route_cases.h"
#include "selftests/unit/test_route_data.h"

#define PRECEDENCE_DIR route_testdata()

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
	for (size_t i = 0; i < sizeof(route_cases) / sizeof(route_cases[0]);
	     i++) {
		const struct rcase *c = &route_cases[i];
		struct route_result res;
		struct http_req req;
		char head[1024], got[256];
		int n, err;

		n = snprintf(head, sizeof(head),
			     "%s %s HTTP/1.1\r\n%s%s%s%s\r\n", c->method,
			     c->target, c->host ? "Host: " : "",
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
				   "\"%s\" (%s)\n%s",
				   c->what, got,
				   res.deferred ? "deferred" : "kernel", err,
				   c->want,
				   c->bpf == DEFER ? "deferred" : "kernel",
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
				    (!strcmp(t->routes[i - 1].ns,
					     t->routes[i].ns) &&
				     strcmp(t->routes[i - 1].name,
					    t->routes[i].name) < 0));
	}
	ASSERT_EQ(t->nroutes, 19);
	/* Why the ones that refer to gw are not attached. */
	ASSERT_EQ(t->ndetached, 4);
	for (size_t i = 0; i < t->ndetached; i++) {
		const char *n = t->detached[i].src->name;
		const char *want =
			!strcmp(n, "othns")
				? "listener same-only takes routes "
				  "from namespace infra only (allowedRoutes from "
				  "Same)"
			: !strcmp(n, "sel")
				? "listener selector: namespace apps "
				  "does not match allowedRoutes.namespaces.selector"
			: !strcmp(n, "selxdb") ? "listener selexpr: namespace "
						 "teamb does not match"
			: !strcmp(n, "nomatch")
				? "no hostname intersects "
				  "listener wild's hostname *.example.com"
				: "?";

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
		    key->kind == MM_PATH_PREFIX && key->hash == MM_FNV_OFFSET)
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
				       sizeof(err)),
		  -ENOENT);
	ASSERT_TRUE(strstr(err, "infra/nope") != NULL, "%s", err);
	ASSERT_EQ(route_compile__build(m, "nope", 1, &t, err, sizeof(err)),
		  -EINVAL);
	ASSERT_TRUE(t == NULL);
	gateway_api__free(m);
}
