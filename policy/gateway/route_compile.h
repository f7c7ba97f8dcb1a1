/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Gateway API model -> route table in the map format of bpf/milometer.h,
 * plus what user space needs to finish the decisions BPF defers.
 *
 * Each virtual host (one per distinct hostname after listener/route
 * hostname intersection, as Envoy builds them) holds every match of every
 * attached route's rules in one list sorted by Gateway API precedence
 * (apis/v1/httproute_types.go, HTTPRouteRule.Matches: "MUST prioritize
 * matches based on the following criteria, continuing on ties"):
 *
 *   Exact path > RegularExpression path (longer expression first; the
 *   spec leaves regex ranking to implementations, this is Envoy Gateway's
 *   order) > PathPrefix (longer normalised prefix first) > method match >
 *   more header matches > more query param matches > older route
 *   (creationTimestamp; routes without one are newer than any that has one)
 *   > "namespace/name" alphabetical > rule order > match order.
 *
 * Listeners: a route is attached to the listeners its parentRefs select
 * (sectionName, port) that admit it (protocol, allowedRoutes kinds and
 * namespaces) and whose hostname intersects its hostnames. When a
 * Gateway's HTTP/HTTPS listeners use two ports or more, each port gets
 * its own virtual hosts (the key's port), built only from the routes
 * attached to the listeners on that port, beside the port-0 set of every
 * listener merged (for a socket on no listener's port, an upstream leg
 * with no downstream request, HTTP/2 streams decoded in user space). A
 * Gateway with one port has only the port-0 set. Within a port, a hostname
 * that a more specific sibling listener on the same port owns is that
 * listener's alone (the Gateway API's listener isolation, as Envoy
 * Gateway's computeHosts applies it).
 *
 * A request's Host selects exactly one virtual host (exact, then the
 * longest "*." suffix, then catch-all) and never falls back to a less
 * specific one, which is the spec's "largest number of characters in a
 * matching (non-wildcard) hostname" across routes. Routes whose intersected
 * hostnames are identical are ranked by the intersection, not by the
 * hostnames they were written with (the spec allows this; the other way is
 * its Extended GatewayRouteHostnameIntersectionPrecedence feature).
 *
 * The BPF keys are that list cut by (kind, path): one candidate list per
 * distinct Exact path and per distinct normalised prefix, in the same order.
 * Candidates that an earlier unconditional candidate for the same method
 * already shadows are dropped, and the list ends after an unconditional
 * any-method candidate. A list that still needs more than MM_ROUTE_CANDS
 * entries keeps the first MM_ROUTE_CANDS - 1 and ends with a sentinel
 * { route_id MM_ROUTE_DEFER, rule 0, method MM_M_ANY, MM_CAND_NEEDS_USER }
 * (unless the 8th candidate itself ends the list): BPF reaching it defers,
 * user space walks the full list. Regex matches get no keys; their vhost
 * has MM_VHOST_HAS_REGEX. A PathPrefix with MM_PATH_PREFIXES or more '/'
 * sets MM_VHOST_DEEP: BPF defers paths with more '/' than it hashes.
 */
#ifndef MM_POLICY_ROUTE_COMPILE_H
#define MM_POLICY_ROUTE_COMPILE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/milometer.h"
#include "policy/gateway/gateway_api.h"

struct rc_route {
	const struct gw_route *src;
	const char *ns, *name, *uid;
	const char *gw_ns, *gw_name; /* first selected Gateway it attached to */
	uint32_t nrules;
	uint32_t rank; /* position in age-then-name order (0 = wins ties) */
	uint16_t gw;   /* gateway slot whose table holds it */
};

/* One (route, rule, match) in a virtual host. */
struct rc_entry {
	uint32_t route_id;
	uint16_t rule_idx;
	uint16_t match_idx;
	const struct gw_match *m;
	/* PathPrefix normalised (no trailing '/', "/" -> ""): the first
	 * prefix_len bytes of m->path. */
	size_t prefix_len;
};

struct rc_vhost {
	const char *host; /* "a.example.com", "*.example.com", "" = catch-all */
	enum mm_vhost_kind kind;
	uint32_t flags; /* MM_VHOST_* */
	uint16_t gw;    /* gateway slot */
	uint16_t port;  /* listener port, 0: every listener (mm_vhost_key) */
	struct rc_entry *entries; /* precedence order */
	size_t nentries;
};

/* A route that refers to a selected Gateway but attaches to no listener. */
struct rc_detached {
	const struct gw_route *src;
	char why[256]; /* the first reason, for messages */
};

/*
 * One Gateway's part of the table: the processes of its pods carry the slot
 * (struct mm_target.gw) and every vhost key of the part carries it too, so a
 * request is matched only against the routes of the Gateway that served it.
 */
struct rc_slot {
	char *gw_ns, *gw_name; /* NULL: every Gateway merged (slot 0 only) */
	bool missing;          /* named Gateway not in the model: no routes */
	size_t route_first, nroutes; /* its routes in routes[] */
	/*
	 * Listener ports with their own vhosts (a Gateway with two ports or
	 * more; none otherwise): the agent maps each to the proxy's socket
	 * port in mm_listeners.
	 */
	uint16_t ports[GW_MAX_LISTENERS];
	/* the socket port of each, from the Gateway's Service; 0: not known */
	uint16_t sports[GW_MAX_LISTENERS];
	size_t nports;
};

struct route_table {
	uint32_t gen;
	struct rc_slot *slots; /* gateway slot is the index */
	size_t nslots;
	const struct gw_model *model; /* borrowed: must outlive the table */

	struct rc_route *routes; /* route_id is the index */
	size_t nroutes;
	struct rc_vhost *vhosts; /* vhost_id is the index */
	size_t nvhosts;

	struct rc_detached *detached;
	size_t ndetached;
	/* matches left out: rule index past 8 bits or match index past 16 */
	size_t unindexable;

	/* mm_vhosts map contents, sorted by (gw, port, kind, hash) */
	struct mm_vhost_key *vhost_keys;
	struct mm_vhost_val *vhost_vals;
	size_t nvhost_keys;

	/* mm_route_cands map contents, sorted by (vhost_id, kind, hash);
	 * vhost ids are global, so a route key needs no slot */
	struct mm_route_key *route_keys;
	struct mm_route_cands *route_cands;
	size_t nroute_keys;
};

/*
 * gateway: "NS/NAME" to compile the routes of one Gateway (one proxy), or
 * NULL for every Gateway in the model merged into one table (their
 * listeners' ports taken together). -ENOENT when the named Gateway is
 * absent.
 */
int route_compile__build(const struct gw_model *m, const char *gateway,
			 uint32_t gen, struct route_table **out, char *err,
			 size_t errlen);
/*
 * One table for several route tables side by side: gateways[i] is what
 * route_compile__build takes for gateway slot i. Only slot 0's Gateway
 * must exist (-ENOENT); a later slot's absent Gateway leaves it empty with
 * missing set, so its requests are unmatched until the Gateway appears.
 */
int route_compile__build_slots(const struct gw_model *m,
			       const char *const *gateways, size_t n,
			       uint32_t gen, struct route_table **out,
			       char *err, size_t errlen);
void route_compile__free(struct route_table *t);

/*
 * Can the table leave a request to user space by its candidates or virtual
 * hosts (header, query or regex matches, prefixes deeper than BPF hashes)?
 * The agent says so to BPF (MM_CFG_DEFERS), which then keeps every request
 * head that spans windows; a request can defer by itself too (an
 * absolute-form target, a long host), which BPF sees on its own.
 */
bool route_compile__defers(const struct route_table *t);

/*
 * How parentRef p of route r attaches to Gateway g's listeners: the one
 * listener selection the route table (so the agent and `explain`) and
 * `milometer check` use. A listener with p's sectionName (p naming none:
 * every listener) and port (none: any) takes the route when its protocol
 * and allowedRoutes admit it, at every hostname where its hostname and
 * the route's intersect and no more specific listener on its port owns
 * that hostname (listener isolation). on_attach (may be NULL) is called
 * for each (listener, vhost hostname) taken; its non-zero return stops
 * and is returned. 0 otherwise, with a filled.
 */
struct rc_parent_attach {
	bool named;   /* a listener has p's sectionName (or p names none) */
	bool matched; /* ... and p's port */
	bool allowed; /* one of those admits the route (protocol, allowedRoutes) */
	size_t nattached;
	const struct gw_listener *attached[GW_MAX_LISTENERS];
	/* the first allowed listener with no hostname left, and who owns
	 * its hostnames when a more specific sibling does (else NULL) */
	const struct gw_listener *nohost, *owner;
	char rejected[192]; /* why the first matched listener refused it */
	char why[192];      /* when nothing attached: the first reason */
};
typedef int (*rc_attach_fn)(void *ctx, const struct gw_listener *l,
			    const char *host);
int route_compile__attach_parent(const struct gw_model *m,
				 const struct gw_gateway *g,
				 const struct gw_route *r,
				 const struct gw_parent_ref *p,
				 rc_attach_fn on_attach, void *ctx,
				 struct rc_parent_attach *a);

/* FNV-1a 64 as BPF computes it. */
uint64_t route_compile__hash(const void *buf, size_t len);

/* Envoy Gateway's cluster name: "httproute/NS/NAME/rule/N". */
int route_compile__cluster_name(const struct route_table *t, uint32_t route_id,
				unsigned int rule, char *buf, size_t len);

/*
 * Hostname of a listener and of a route, intersected per the Gateway API:
 * writes the resulting vhost hostname ("" for catch-all) to out and returns
 * true, or false when they do not intersect. lhost/rhost NULL = none.
 */
bool route_compile__intersect(const char *lhost, const char *rhost, char *out,
			      size_t outlen);

/* Does hostname pattern `pat` ("*.x" or exact) match host `h`? */
bool route_compile__host_matches(const char *pat, const char *h);

/*
 * The listener of g that takes a request for host h (normalised, "" when
 * none) arriving on listener port `port`: among g's HTTP/HTTPS listeners
 * on that port whose hostname matches h, the most specific (exact, then
 * the longest wildcard, then none). NULL when none does.
 */
const struct gw_listener *
route_compile__listener_for(const struct gw_gateway *g, uint32_t port,
			    const char *h);

/* Does the table hold vhosts of listener port `port` in slot gw? */
bool route_compile__port_keyed(const struct route_table *t, uint32_t gw,
			       uint32_t port);

#endif /* MM_POLICY_ROUTE_COMPILE_H */
