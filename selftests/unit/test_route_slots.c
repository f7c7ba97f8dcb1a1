// SPDX-License-Identifier: Apache-2.0
/*
 * Several Gateways on one node (route_compile__build_slots): each gateway
 * slot's part of the table holds only the routes attached to its Gateway,
 * lookups in one slot never see another's routes (route_match__lookup also
 * replays the kernel walk over the merged keys and fails on a mismatch),
 * and a Gateway not known yet leaves its slot empty instead of failing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "selftests/unit/test.h"

static const char manifests[] =
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: Gateway\n"
	"metadata: {name: edge, namespace: infra}\n"
	"spec:\n"
	"  gatewayClassName: a\n"
	"  listeners: [{name: http, protocol: HTTP, port: 80,"
	" allowedRoutes: {namespaces: {from: All}}}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: Gateway\n"
	"metadata: {name: internal, namespace: infra}\n"
	"spec:\n"
	"  gatewayClassName: b\n"
	"  listeners: [{name: http, protocol: HTTP, port: 8080,"
	" allowedRoutes: {namespaces: {from: All}}}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: public-api, namespace: apps}\n"
	"spec:\n"
	"  parentRefs: [{name: edge, namespace: infra}]\n"
	"  hostnames: [api.example.com]\n"
	"  rules: [{matches: [{path: {type: PathPrefix, value: /v1}}]}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: private-api, namespace: apps}\n"
	"spec:\n"
	"  parentRefs: [{name: internal, namespace: infra}]\n"
	"  hostnames: [api.example.com]\n"
	"  rules:\n"
	"  - matches: [{path: {type: Exact, value: /v1/admin}}]\n"
	"  - matches: [{path: {type: PathPrefix, value: /}}]\n"
	"---\n"
	"apiVersion: gateway.networking.k8s.io/v1\n"
	"kind: HTTPRoute\n"
	"metadata: {name: health, namespace: apps}\n"
	"spec:\n"
	"  parentRefs:\n"
	"  - {name: edge, namespace: infra}\n"
	"  - {name: internal, namespace: infra}\n"
	"  rules: [{matches: [{path: {type: Exact, value: /healthz}}]}]\n";

static struct gw_model *load(void)
{
	struct gw_model *m = gateway_api__new();
	char path[4096], err[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/gw.yaml", test__tmpdir());
	f = fopen(path, "w");
	if (!f || fputs(manifests, f) < 0 || fclose(f) ||
	    gateway_api__load_dir(m, test__tmpdir(), err, sizeof(err))) {
		test__fail(__FILE__, __LINE__, "manifests: %s", err);
		gateway_api__free(m);
		return NULL;
	}
	return m;
}

/* "ns/name rule N @gateway", or "unmatched", for a GET in slot gw. */
static const char *lookup(const struct route_table *t, uint32_t gw,
			  const char *host, const char *path)
{
	static char out[256];
	char head[256];
	struct route_result res;
	struct http_req req;
	int n = snprintf(head, sizeof(head),
			 "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host);

	if (route_match__parse_head(head, (size_t)n, &req) ||
	    route_match__lookup(t, gw, 0, &req, &res))
		return "lookup failed";
	if (res.route_id >= t->nroutes)
		return "unmatched";
	snprintf(out, sizeof(out), "%s/%s rule %u @%s",
		 t->routes[res.route_id].ns, t->routes[res.route_id].name,
		 res.rule_idx, t->routes[res.route_id].gw_name);
	if (t->routes[res.route_id].gw != gw)
		return "route of another slot";
	return out;
}

TEST(route_slots_each_gateway_its_routes)
{
	static const char *const gws[] = { NULL, "infra/edge",
					   "infra/internal" };
	struct gw_model *m = load();
	struct route_table *t = NULL;
	char err[256];

	ASSERT_TRUE(m != NULL);
	ASSERT_EQ(route_compile__build_slots(m, gws, 3, 1, &t, err,
					     sizeof(err)),
		  0);
	ASSERT_EQ(t->nslots, 3);
	/* paths and hosts only: BPF decides every request of this table */
	ASSERT_TRUE(!route_compile__defers(t));
	ASSERT_TRUE(!t->slots[0].gw_name && !t->slots[1].missing);
	ASSERT_STREQ(t->slots[2].gw_ns, "infra");
	ASSERT_STREQ(t->slots[2].gw_name, "internal");
	/* the same Host and path, three answers */
	ASSERT_STREQ(lookup(t, 1, "api.example.com", "/v1/admin"),
		     "apps/public-api rule 0 @edge");
	ASSERT_STREQ(lookup(t, 2, "api.example.com", "/v1/admin"),
		     "apps/private-api rule 0 @internal");
	ASSERT_STREQ(lookup(t, 2, "api.example.com", "/v2"),
		     "apps/private-api rule 1 @internal");
	ASSERT_STREQ(lookup(t, 1, "api.example.com", "/v2"), "unmatched");
	/* one route on both Gateways: one entry per slot, each its Gateway */
	ASSERT_STREQ(lookup(t, 1, "x.test", "/healthz"),
		     "apps/health rule 0 @edge");
	ASSERT_STREQ(lookup(t, 2, "x.test", "/healthz"),
		     "apps/health rule 0 @internal");
	/* slot 0 (no --gateway): every Gateway merged, as before slots */
	ASSERT_TRUE(strstr(lookup(t, 0, "x.test", "/healthz"), "apps/health") !=
		    NULL);
	/* a slot past the table: nothing matches */
	ASSERT_STREQ(lookup(t, 7, "api.example.com", "/v1"), "unmatched");
	/* every key of a slot points into that slot's routes */
	for (size_t i = 0; i < t->nvhost_keys; i++) {
		const struct rc_vhost *vh =
			&t->vhosts[t->vhost_vals[i].vhost_id];

		ASSERT_EQ(vh->gw, t->vhost_keys[i].gw);
		for (size_t e = 0; e < vh->nentries; e++)
			ASSERT_EQ(t->routes[vh->entries[e].route_id].gw,
				  vh->gw);
	}
	for (size_t i = 0; i < t->nroute_keys; i++) {
		const struct mm_route_cands *c = &t->route_cands[i];
		uint16_t gw = t->vhosts[t->route_keys[i].vhost_id].gw;

		for (uint32_t k = 0; k < c->n; k++)
			if (c->c[k].route_id != MM_ROUTE_DEFER)
				ASSERT_EQ(t->routes[c->c[k].route_id].gw, gw);
	}
	route_compile__free(t);
	gateway_api__free(m);
}

TEST(route_slots_unknown_gateway)
{
	static const char *const later[] = { "infra/edge", "infra/not-yet" };
	static const char *const typo[] = { "infra/egde", "infra/edge" };
	struct gw_model *m = load();
	struct route_table *t = NULL;
	char err[256];

	ASSERT_TRUE(m != NULL);
	/* a pod's Gateway the API has not shown yet: an empty slot */
	ASSERT_EQ(route_compile__build_slots(m, later, 2, 1, &t, err,
					     sizeof(err)),
		  0);
	ASSERT_TRUE(t->slots[1].missing && !t->slots[1].nroutes);
	ASSERT_STREQ(lookup(t, 1, "api.example.com", "/v1"), "unmatched");
	ASSERT_STREQ(lookup(t, 0, "api.example.com", "/v1"),
		     "apps/public-api rule 0 @edge");
	route_compile__free(t);
	/* --gateway with a typo stays an error */
	ASSERT_EQ(route_compile__build_slots(m, typo, 2, 1, &t, err,
					     sizeof(err)),
		  -ENOENT);
	ASSERT_TRUE(strstr(err, "infra/egde") != NULL, "%s", err);
	ASSERT_EQ(route_compile__build_slots(m, typo, 0, 1, &t, err,
					     sizeof(err)),
		  -EINVAL);
	gateway_api__free(m);
}
