// SPDX-License-Identifier: Apache-2.0
/*
 * Attach routes to listeners, build one precedence-sorted match list per
 * virtual host, and cut those lists into the BPF map entries described in
 * route_compile.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bpf/fnv1a.h"
#include "policy/gateway/route_compile.h"

#define HOST_MAX 256

_Static_assert(FNV1A64_OFFSET == MM_FNV_OFFSET && FNV1A64_PRIME == MM_FNV_PRIME,
	       "user space and BPF hash routes alike");

bool route_compile__defers(const struct route_table *t)
{
	for (size_t i = 0; i < t->nvhost_keys; i++)
		if (t->vhost_vals[i].flags &
		    (MM_VHOST_HAS_REGEX | MM_VHOST_DEEP))
			return true;
	for (size_t i = 0; i < t->nroute_keys; i++)
		for (uint32_t j = 0;
		     j < t->route_cands[i].n && j < MM_ROUTE_CANDS; j++)
			if (t->route_cands[i].c[j].flags & MM_CAND_NEEDS_USER)
				return true;
	return false;
}

uint64_t route_compile__hash(const void *buf, size_t len)
{
	return fnv1a64(FNV1A64_OFFSET, buf, len);
}

int route_compile__cluster_name(const struct route_table *t, uint32_t route_id,
				unsigned int rule, char *buf, size_t len)
{
	int n;

	if (route_id >= t->nroutes)
		return -ENOENT;
	n = snprintf(buf, len, "httproute/%s/%s/rule/%u",
		     t->routes[route_id].ns, t->routes[route_id].name, rule);
	return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static bool ends_with_label(const char *h, const char *sfx)
{
	size_t hl = strlen(h), sl = strlen(sfx);

	/* "*." covers one or more labels, never the bare suffix. */
	return hl > sl + 1 && h[hl - sl - 1] == '.' &&
	       !strcasecmp(h + hl - sl, sfx);
}

bool route_compile__host_matches(const char *pat, const char *h)
{
	if (pat[0] == '*' && pat[1] == '.')
		return ends_with_label(h, pat + 2);
	return !strcasecmp(pat, h);
}

static bool put(char *out, size_t outlen, const char *s)
{
	return (size_t)snprintf(out, outlen, "%s", s) < outlen;
}

bool route_compile__intersect(const char *l, const char *r, char *out,
			      size_t outlen)
{
	bool lw, rw;

	if (!l && !r)
		return put(out, outlen, "");
	if (!l)
		return put(out, outlen, r);
	if (!r)
		return put(out, outlen, l);
	lw = l[0] == '*';
	rw = r[0] == '*';
	if (!lw && !rw)
		return !strcasecmp(l, r) && put(out, outlen, l);
	if (lw && !rw)
		return route_compile__host_matches(l, r) && put(out, outlen, r);
	if (!lw && rw)
		return route_compile__host_matches(r, l) && put(out, outlen, l);
	/* Both wildcards: the more specific one, if one contains the other. */
	if (!strcasecmp(l, r))
		return put(out, outlen, l);
	if (ends_with_label(r + 2, l + 2))
		return put(out, outlen, r);
	if (ends_with_label(l + 2, r + 2))
		return put(out, outlen, l);
	return false;
}

static bool is_http(const struct gw_listener *l)
{
	return !strcmp(l->protocol, "HTTP") || !strcmp(l->protocol, "HTTPS");
}

/* Exact beats every wildcard, a longer wildcard a shorter one, any none. */
static size_t host_specificity(const char *h)
{
	if (!h)
		return 0;
	return h[0] == '*' ? 1 + strlen(h) : (size_t)-1;
}

/* Does listener hostname pattern `pat` take every request for h? */
static bool host_covers(const char *pat, const char *h)
{
	if (!h[0])
		return false;
	if (h[0] == '*')
		return pat[0] == '*' &&
		       (!strcasecmp(pat, h) || ends_with_label(h + 2, pat + 2));
	return route_compile__host_matches(pat, h);
}

const struct gw_listener *
route_compile__listener_for(const struct gw_gateway *g, uint32_t port,
			    const char *h)
{
	const struct gw_listener *best = NULL;

	for (size_t i = 0; i < g->nlisteners; i++) {
		const struct gw_listener *l = &g->listeners[i];

		if (l->port != port || !is_http(l))
			continue;
		if (l->hostname &&
		    (!h || !h[0] ||
		     !route_compile__host_matches(l->hostname, h)))
			continue;
		if (!best || host_specificity(l->hostname) >
				     host_specificity(best->hostname))
			best = l;
	}
	return best;
}

/*
 * Listener isolation: a request is served by the most specific listener
 * on its port, so a hostname that a more specific sibling on l's port
 * covers is not l's (Envoy Gateway's computeHosts drops it likewise).
 */
static const struct gw_listener *owner_sibling(const struct gw_gateway *g,
					       const struct gw_listener *l,
					       const char *h)
{
	for (size_t i = 0; i < g->nlisteners; i++) {
		const struct gw_listener *s = &g->listeners[i];

		if (s == l || s->port != l->port || !is_http(s) || !s->hostname)
			continue;
		if (host_specificity(s->hostname) >
			    host_specificity(l->hostname) &&
		    host_covers(s->hostname, h))
			return s;
	}
	return NULL;
}

#define NO_ROUTE UINT32_MAX /* a listener's hostname vhost, no route */

/* Build state: (route, listener port, vhost hostname) before sorting. */
struct attach {
	uint32_t route_id;
	uint16_t port; /* 0: the every-listener set */
	char host[HOST_MAX];
};

struct build {
	const struct gw_model *m;
	struct route_table *t;
	const struct gw_gateway **gws;
	size_t ngws;
	const struct gw_route **routes; /* model routes sorted by ns/name */
	struct attach *att;
	size_t natt, catt;
	size_t route_first; /* first attachment of the route being attached */
	/* listener ports of the selected Gateways; keyed when 2 or more */
	uint16_t ports[GW_MAX_LISTENERS];
	size_t nports;
	char *err;
	size_t errlen;
};

static int cmp_route_name(const void *a, const void *b)
{
	const struct gw_route *x = *(const struct gw_route *const *)a;
	const struct gw_route *y = *(const struct gw_route *const *)b;
	char kx[512], ky[512];

	/* "{namespace}/{name}" as one string, as the spec words it. */
	snprintf(kx, sizeof(kx), "%s/%s", x->ns, x->name);
	snprintf(ky, sizeof(ky), "%s/%s", y->ns, y->name);
	return strcmp(kx, ky);
}

/* NULL when the listener takes the route, else why not (into buf). */
static const char *
listener_rejects(const struct gw_model *m, const struct gw_gateway *g,
		 const struct gw_listener *l, const struct gw_route *r,
		 const struct gw_parent_ref *p, char *buf, size_t len)
{
	if (p->port && p->port != l->port) {
		snprintf(buf, len,
			 "parentRef port %u is not listener %s's "
			 "port %u",
			 p->port, l->name, l->port);
		return buf;
	}
	if (strcmp(l->protocol, "HTTP") && strcmp(l->protocol, "HTTPS")) {
		snprintf(buf, len, "listener %s is %s, not HTTP or HTTPS",
			 l->name, l->protocol);
		return buf;
	}
	if (!l->allows_httproute) {
		snprintf(buf, len,
			 "listener %s: allowedRoutes.kinds has no "
			 "HTTPRoute",
			 l->name);
		return buf;
	}
	switch (l->from) {
	case GW_FROM_SAME:
		if (!strcmp(r->ns, g->ns))
			return NULL;
		snprintf(buf, len,
			 "listener %s takes routes from namespace "
			 "%s only (allowedRoutes from Same)",
			 l->name, g->ns);
		return buf;
	case GW_FROM_ALL:
		return NULL;
	case GW_FROM_SELECTOR: {
		const struct gw_namespace *ns =
			gateway_api__namespace(m, r->ns);

		if (!ns) {
			snprintf(buf, len,
				 "listener %s selects namespaces by "
				 "label and Namespace %s is not known (its "
				 "labels decide)",
				 l->name, r->ns);
			return buf;
		}
		if (l->selector && gateway_api__selects(l->selector, ns))
			return NULL;
		snprintf(buf, len,
			 "listener %s: namespace %s does not match "
			 "allowedRoutes.namespaces.selector",
			 l->name, r->ns);
		return buf;
	}
	}
	return buf;
}

static int add_attach1(struct build *b, uint32_t route_id, uint16_t port,
		       const char *host)
{
	struct attach *grown;

	/* The same hostname through two listeners is one attachment. */
	for (size_t i = b->route_first; i < b->natt; i++)
		if (b->att[i].port == port && !strcmp(b->att[i].host, host))
			return 0;
	if (b->natt == b->catt) {
		size_t cap = b->catt ? b->catt * 2 : 16;

		grown = realloc(b->att, cap * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		b->att = grown;
		b->catt = cap;
	}
	b->att[b->natt].route_id = route_id;
	b->att[b->natt].port = port;
	snprintf(b->att[b->natt].host, HOST_MAX, "%s", host);
	b->natt++;
	return 0;
}

/* Into the listener's port set when ports are keyed, and the merged set. */
static int add_attach(struct build *b, uint32_t route_id,
		      const struct gw_listener *l, const char *host)
{
	int err = 0;

	if (b->nports > 1)
		err = add_attach1(b, route_id, (uint16_t)l->port, host);
	return err ? err : add_attach1(b, route_id, 0, host);
}

/*
 * Every listener hostname gets its vhost on its port, routes or none: a
 * request the most specific listener takes never falls through to a less
 * specific listener's routes. The merged set keeps only route vhosts.
 */
static int add_listener_vhosts(struct build *b)
{
	int err;

	for (size_t g = 0; g < b->ngws; g++)
		for (size_t i = 0; i < b->gws[g]->nlisteners; i++) {
			const struct gw_listener *l = &b->gws[g]->listeners[i];

			if (!is_http(l) || !l->hostname)
				continue;
			b->route_first = b->natt;
			err = add_attach1(b, NO_ROUTE,
					  b->nports > 1 ? (uint16_t)l->port : 0,
					  l->hostname);
			if (err)
				return err;
		}
	return 0;
}

static int collect_ports(struct build *b)
{
	for (size_t g = 0; g < b->ngws; g++)
		for (size_t i = 0; i < b->gws[g]->nlisteners; i++) {
			const struct gw_listener *l = &b->gws[g]->listeners[i];
			size_t k;

			if (!is_http(l))
				continue;
			for (k = 0; k < b->nports && b->ports[k] != l->port;
			     k++)
				;
			if (k < b->nports)
				continue;
			if (b->nports == GW_MAX_LISTENERS) {
				/* every Gateway merged, past what a slot maps */
				b->nports = 0;
				return 0;
			}
			b->ports[b->nports++] = (uint16_t)l->port;
		}
	return 0;
}

int route_compile__attach_parent(const struct gw_model *m,
				 const struct gw_gateway *g,
				 const struct gw_route *r,
				 const struct gw_parent_ref *p,
				 rc_attach_fn on_attach, void *ctx,
				 struct rc_parent_attach *a)
{
	char host[HOST_MAX], reason[192];
	int err;

	memset(a, 0, sizeof(*a));
	for (size_t l = 0; l < g->nlisteners; l++) {
		const struct gw_listener *li = &g->listeners[l];
		const struct gw_listener *owner = NULL;
		bool port_ok = !p->port || p->port == li->port, hit = false;
		const char *no;

		if (p->section && strcmp(p->section, li->name))
			continue;
		a->named = true;
		a->matched |= port_ok;
		no = listener_rejects(m, g, li, r, p, reason, sizeof(reason));
		if (no) {
			if (!a->why[0])
				snprintf(a->why, sizeof(a->why), "%s", no);
			if (port_ok && !a->rejected[0])
				snprintf(a->rejected, sizeof(a->rejected), "%s",
					 no);
			continue;
		}
		a->allowed = true;
		for (size_t h = 0; h < (r->nhostnames ? r->nhostnames : 1);
		     h++) {
			const struct gw_listener *o;

			if (!route_compile__intersect(
				    li->hostname,
				    r->nhostnames ? r->hostnames[h] : NULL,
				    host, sizeof(host)))
				continue;
			o = owner_sibling(g, li, host);
			if (o) {
				owner = owner ? owner : o;
				continue;
			}
			hit = true;
			if (on_attach && (err = on_attach(ctx, li, host)))
				return err;
		}
		if (hit) {
			if (a->nattached < GW_MAX_LISTENERS)
				a->attached[a->nattached++] = li;
			continue;
		}
		if (!a->nohost) {
			a->nohost = li;
			a->owner = owner;
		}
		if (a->why[0])
			continue;
		if (owner)
			snprintf(a->why, sizeof(a->why),
				 "listener %s's "
				 "hostnames are listener %s's (%s, more "
				 "specific, same port %u)",
				 li->name, owner->name, owner->hostname,
				 li->port);
		else
			snprintf(a->why, sizeof(a->why),
				 "no hostname "
				 "intersects listener %s's hostname %s",
				 li->name, li->hostname);
	}
	if (!a->named && p->section)
		snprintf(a->why, sizeof(a->why),
			 "Gateway %s/%s has no "
			 "listener named %s",
			 g->ns, g->name, p->section);
	return 0;
}

struct attach_ctx {
	struct build *b;
	uint32_t route_id;
};

static int attach_one(void *ctx, const struct gw_listener *l, const char *host)
{
	struct attach_ctx *x = ctx;

	return add_attach(x->b, x->route_id, l, host);
}

/*
 * Attachments of one route to every selected listener it refers to. A
 * route that refers to a selected Gateway but attaches nowhere gets the
 * first reason in why; why stays "" when it refers to none.
 */
static int attach_route(struct build *b, const struct gw_route *r,
			uint32_t route_id, const char **gw_ns,
			const char **gw_name, char *why, size_t whylen)
{
	struct attach_ctx x = { b, route_id };
	struct rc_parent_attach a;
	int err;

	why[0] = '\0';
	b->route_first = b->natt;
	for (size_t p = 0; p < r->nparents; p++) {
		const struct gw_parent_ref *pr = &r->parents[p];

		if (strcmp(pr->group, GW_GROUP) || strcmp(pr->kind, "Gateway"))
			continue;
		for (size_t g = 0; g < b->ngws; g++) {
			const struct gw_gateway *gw = b->gws[g];

			if (strcmp(pr->ns, gw->ns) ||
			    strcmp(pr->name, gw->name))
				continue;
			err = route_compile__attach_parent(b->m, gw, r, pr,
							   attach_one, &x, &a);
			if (err)
				return err;
			if (!why[0] && a.why[0])
				snprintf(why, whylen, "%s", a.why);
			if (!*gw_ns && b->natt > b->route_first) {
				*gw_ns = gw->ns;
				*gw_name = gw->name;
			}
		}
	}
	return 0;
}

static int cmp_rank(const void *a, const void *b, void *arg)
{
	const struct route_table *t = arg;
	const struct gw_route *x = t->routes[*(const uint32_t *)a].src;
	const struct gw_route *y = t->routes[*(const uint32_t *)b].src;

	/* Oldest first; a route without a timestamp is the newest. */
	if (!!x->created != !!y->created)
		return x->created ? -1 : 1;
	if (x->created && x->created_s != y->created_s)
		return x->created_s < y->created_s ? -1 : 1;
	/* route_id order is "{namespace}/{name}" order. */
	return (*(const uint32_t *)a > *(const uint32_t *)b) -
	       (*(const uint32_t *)a < *(const uint32_t *)b);
}

static int path_rank(enum gw_path_type t)
{
	return t == GW_PATH_EXACT ? 0 : t == GW_PATH_REGEX ? 1 : 2;
}

static int cmp_entry(const void *a, const void *b, void *arg)
{
	const struct route_table *t = arg;
	const struct rc_entry *x = a, *y = b;
	const struct gw_match *mx = x->m, *my = y->m;
	uint32_t rx, ry;

	if (path_rank(mx->path_type) != path_rank(my->path_type))
		return path_rank(mx->path_type) - path_rank(my->path_type);
	if (mx->path_type == GW_PATH_REGEX &&
	    strlen(mx->path) != strlen(my->path))
		return strlen(mx->path) > strlen(my->path) ? -1 : 1;
	if (mx->path_type == GW_PATH_PREFIX && x->prefix_len != y->prefix_len)
		return x->prefix_len > y->prefix_len ? -1 : 1;
	if ((mx->method == MM_M_ANY) != (my->method == MM_M_ANY))
		return mx->method != MM_M_ANY ? -1 : 1;
	if (mx->nheaders != my->nheaders)
		return mx->nheaders > my->nheaders ? -1 : 1;
	if (mx->nquery != my->nquery)
		return mx->nquery > my->nquery ? -1 : 1;
	rx = t->routes[x->route_id].rank;
	ry = t->routes[y->route_id].rank;
	if (rx != ry)
		return rx < ry ? -1 : 1;
	if (x->rule_idx != y->rule_idx)
		return x->rule_idx < y->rule_idx ? -1 : 1;
	return x->match_idx < y->match_idx ? -1 : x->match_idx > y->match_idx;
}

static size_t norm_prefix_len(const char *path)
{
	size_t len = strlen(path);

	/* "/foo/" and "/foo" are the same element-wise prefix; "/" is "". */
	while (len && path[len - 1] == '/')
		len--;
	return len;
}

/* Entries of the routes attached as att[from, to), all with vh's host. */
static int fill_vhost(struct build *b, struct rc_vhost *vh, size_t from,
		      size_t to)
{
	struct route_table *t = b->t;
	size_t n = 0;

	for (size_t i = from; i < to; i++) {
		const struct gw_route *r;

		if (b->att[i].route_id == NO_ROUTE)
			continue;
		r = t->routes[b->att[i].route_id].src;
		for (size_t k = 0; k < r->nrules; k++)
			n += r->rules[k].nmatches;
	}
	vh->entries = calloc(n ? n : 1, sizeof(*vh->entries));
	if (!vh->entries)
		return -ENOMEM;
	for (size_t i = from; i < to; i++) {
		uint32_t id = b->att[i].route_id;
		const struct gw_route *r;

		if (id == NO_ROUTE)
			continue;
		r = t->routes[id].src;

		for (size_t k = 0; k < r->nrules; k++)
			for (size_t j = 0; j < r->rules[k].nmatches; j++) {
				struct rc_entry *e;

				/*
				 * The BPF ABI indexes rules with 8 bits (the
				 * event's rule_idx) and matches with 16.
				 * gateway_api.h's limits keep a route far
				 * below; should a model bypass them, count
				 * what does not fit, never wrap.
				 */
				if (k > UINT8_MAX || j > UINT16_MAX) {
					t->unindexable++;
					continue;
				}
				e = &vh->entries[vh->nentries++];
				e->route_id = id;
				e->rule_idx = (uint16_t)k;
				e->match_idx = (uint16_t)j;
				e->m = &r->rules[k].matches[j];
				if (e->m->path_type == GW_PATH_PREFIX)
					e->prefix_len =
						norm_prefix_len(e->m->path);
				if (e->m->path_type == GW_PATH_REGEX)
					vh->flags |= MM_VHOST_HAS_REGEX;
			}
	}
	qsort_r(vh->entries, vh->nentries, sizeof(*vh->entries), cmp_entry, t);
	return 0;
}

static int cmp_attach(const void *a, const void *b)
{
	const struct attach *x = a, *y = b;
	int c = strcmp(x->host, y->host);

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (c)
		return c;
	return (x->route_id > y->route_id) - (x->route_id < y->route_id);
}

/* One vhost per distinct (port, hostname), ids in that order. */
static int build_vhosts(struct build *b)
{
	struct route_table *t = b->t;
	size_t i, j;
	int err;

	t->vhosts = calloc(b->natt ? b->natt : 1, sizeof(*t->vhosts));
	if (!t->vhosts)
		return -ENOMEM;
	if (b->natt)
		qsort(b->att, b->natt, sizeof(*b->att), cmp_attach);
	for (i = 0; i < b->natt; i = j) {
		struct rc_vhost *vh = &t->vhosts[t->nvhosts++];
		char *h = strdup(b->att[i].host);

		if (!h)
			return -ENOMEM;
		vh->host = h;
		vh->port = b->att[i].port;
		vh->kind = !h[0]         ? MM_VH_CATCHALL
			   : h[0] == '*' ? MM_VH_WILDCARD
					 : MM_VH_EXACT;
		for (j = i + 1; j < b->natt && b->att[j].port == vh->port &&
				!strcmp(b->att[j].host, h);
		     j++)
			;
		err = fill_vhost(b, vh, i, j);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_vhost_key(const void *a, const void *b)
{
	const struct mm_vhost_key *x = a, *y = b;

	if (x->port != y->port)
		return x->port < y->port ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static int build_vhost_keys(struct build *b)
{
	struct route_table *t = b->t;
	struct {
		struct mm_vhost_key k;
		struct mm_vhost_val v;
	} * kv;

	kv = calloc(t->nvhosts ? t->nvhosts : 1, sizeof(*kv));
	t->vhost_keys =
		calloc(t->nvhosts ? t->nvhosts : 1, sizeof(*t->vhost_keys));
	t->vhost_vals =
		calloc(t->nvhosts ? t->nvhosts : 1, sizeof(*t->vhost_vals));
	if (!kv || !t->vhost_keys || !t->vhost_vals) {
		free(kv);
		return -ENOMEM;
	}
	for (size_t v = 0; v < t->nvhosts; v++) {
		const struct rc_vhost *vh = &t->vhosts[v];
		const char *h = vh->kind == MM_VH_WILDCARD ? vh->host + 2
							   : vh->host;

		kv[v].k.gen = t->gen;
		kv[v].k.kind = (__u8)vh->kind;
		kv[v].k.port = vh->port;
		kv[v].k.hash = vh->kind == MM_VH_CATCHALL
				       ? 0
				       : route_compile__hash(h, strlen(h));
		kv[v].v.vhost_id = (uint32_t)v;
		kv[v].v.flags = vh->flags;
	}
	/* The key is the first member, so the pair sorts by key. */
	qsort(kv, t->nvhosts, sizeof(*kv), cmp_vhost_key);
	for (size_t v = 0; v < t->nvhosts; v++) {
		if (v && !cmp_vhost_key(&kv[v - 1].k, &kv[v].k)) {
			snprintf(b->err, b->errlen,
				 "hostnames \"%s\" and \"%s\" have the same "
				 "FNV-1a hash: rename one",
				 t->vhosts[kv[v - 1].v.vhost_id].host,
				 t->vhosts[kv[v].v.vhost_id].host);
			free(kv);
			return -EEXIST;
		}
		t->vhost_keys[v] = kv[v].k;
		t->vhost_vals[v] = kv[v].v;
	}
	t->nvhost_keys = t->nvhosts;
	free(kv);
	return 0;
}

/* One non-regex entry, keyed as BPF will look it up. */
struct key_group {
	uint32_t vhost_id;
	enum mm_path_kind kind;
	const char *path;
	size_t len;
	uint64_t hash;
	const struct rc_entry *e; /* e - vh->entries is its precedence */
};

static int cmp_key(const struct key_group *x, const struct key_group *y)
{
	if (x->vhost_id != y->vhost_id)
		return x->vhost_id < y->vhost_id ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return x->hash < y->hash ? -1 : x->hash > y->hash;
}

static bool same_path(const struct key_group *x, const struct key_group *y)
{
	return x->len == y->len && !memcmp(x->path, y->path, x->len);
}

/* By key, then path (to tell collisions apart), then precedence. */
static int cmp_group(const void *a, const void *b)
{
	const struct key_group *x = a, *y = b;
	int c = cmp_key(x, y);

	if (c)
		return c;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	c = memcmp(x->path, y->path, x->len);
	if (c)
		return c;
	return (x->e > y->e) - (x->e < y->e);
}

/* The candidate list of one key from its entries g[0, n) in order. */
static void fill_cands(const struct key_group *g, size_t n,
		       struct mm_route_cands *c)
{
	uint32_t covered = 0; /* methods an unconditional candidate decided */
	const uint32_t all = (1u << MM_M__COUNT) - 1;

	for (size_t i = 0; i < n; i++) {
		const struct rc_entry *e = g[i].e;
		uint32_t bits;
		bool user;

		bits = e->m->method == MM_M_ANY ? all : 1u << e->m->method;
		if ((covered & bits) == bits)
			continue; /* BPF could never reach it */
		user = e->m->nheaders || e->m->nquery;
		if (c->n == MM_ROUTE_CANDS - 1 && covered != all) {
			/*
			 * Room for one more only if it ends the list for
			 * every method; else the sentinel makes BPF defer.
			 */
			bool last = !user && (covered | bits) == all;

			if (!last) {
				c->c[c->n].route_id = MM_ROUTE_DEFER;
				c->c[c->n].rule_idx = 0;
				c->c[c->n].method = MM_M_ANY;
				c->c[c->n].flags = MM_CAND_NEEDS_USER;
				c->n++;
				return;
			}
		}
		c->c[c->n].route_id = e->route_id;
		c->c[c->n].rule_idx = e->rule_idx;
		c->c[c->n].method = e->m->method;
		c->c[c->n].flags = user ? MM_CAND_NEEDS_USER : 0;
		c->n++;
		if (!user)
			covered |= bits;
		if (covered == all)
			return;
	}
}

static int build_route_keys(struct build *b)
{
	struct route_table *t = b->t;
	struct key_group *g = NULL;
	size_t n = 0, cap = 0, out = 0;
	int ret = 0;

	for (size_t v = 0; v < t->nvhosts; v++)
		cap += t->vhosts[v].nentries;
	g = calloc(cap ? cap : 1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	for (size_t v = 0; v < t->nvhosts; v++) {
		struct rc_vhost *vh = &t->vhosts[v];

		for (size_t i = 0; i < vh->nentries; i++) {
			const struct rc_entry *e = &vh->entries[i];
			struct key_group k = { .vhost_id = (uint32_t)v,
					       .e = e };
			size_t slashes = 0;

			if (e->m->path_type == GW_PATH_REGEX)
				continue;
			k.kind = e->m->path_type == GW_PATH_EXACT
					 ? MM_PATH_EXACT
					 : MM_PATH_PREFIX;
			k.path = e->m->path;
			k.len = k.kind == MM_PATH_EXACT ? strlen(k.path)
							: e->prefix_len;
			k.hash = route_compile__hash(k.path, k.len);
			if (k.kind == MM_PATH_PREFIX) {
				for (size_t c = 0; c < k.len; c++)
					slashes += k.path[c] == '/';
				/* Needs boundary index `slashes`. */
				if (slashes >= MM_PATH_PREFIXES)
					vh->flags |= MM_VHOST_DEEP;
			}
			g[n++] = k;
		}
	}
	qsort(g, n, sizeof(*g), cmp_group);
	t->route_keys = calloc(n ? n : 1, sizeof(*t->route_keys));
	t->route_cands = calloc(n ? n : 1, sizeof(*t->route_cands));
	if (!t->route_keys || !t->route_cands) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1;
		     j < n && !cmp_key(&g[i], &g[j]) && same_path(&g[i], &g[j]);
		     j++)
			;
		if (j < n && !cmp_key(&g[i], &g[j])) {
			snprintf(b->err, b->errlen,
				 "paths \"%.*s\" and \"%.*s\" have the same "
				 "FNV-1a hash in vhost \"%s\": rename one",
				 (int)g[i].len, g[i].path, (int)g[j].len,
				 g[j].path, t->vhosts[g[i].vhost_id].host);
			ret = -EEXIST;
			goto cleanup;
		}
		t->route_keys[out].gen = t->gen;
		t->route_keys[out].vhost_id = g[i].vhost_id;
		t->route_keys[out].kind = g[i].kind;
		t->route_keys[out].hash = g[i].hash;
		fill_cands(&g[i], j - i, &t->route_cands[out]);
		out++;
	}
	t->nroute_keys = out;
	/* DEEP was set above, after the vhost values were written. */
	for (size_t k = 0; k < t->nvhost_keys; k++)
		t->vhost_vals[k].flags =
			t->vhosts[t->vhost_vals[k].vhost_id].flags;
cleanup:
	free(g);
	return ret;
}

static int select_gateways(struct build *b, const char *gateway)
{
	char ns[256];
	const char *slash;

	b->gws = calloc(b->m->ngateways ? b->m->ngateways : 1, sizeof(*b->gws));
	if (!b->gws)
		return -ENOMEM;
	if (!gateway) {
		for (size_t i = 0; i < b->m->ngateways; i++)
			b->gws[b->ngws++] = b->m->gateways[i];
		return 0;
	}
	slash = strchr(gateway, '/');
	if (!slash || slash == gateway || !slash[1] ||
	    (size_t)(slash - gateway) >= sizeof(ns)) {
		snprintf(b->err, b->errlen,
			 "gateway \"%s\": write it as NAMESPACE/NAME", gateway);
		return -EINVAL;
	}
	snprintf(ns, sizeof(ns), "%.*s", (int)(slash - gateway), gateway);
	b->gws[0] = gateway_api__gateway(b->m, ns, slash + 1);
	if (!b->gws[0]) {
		snprintf(b->err, b->errlen,
			 "gateway %s is not in the manifests (%zu Gateway%s "
			 "found)",
			 gateway, b->m->ngateways,
			 b->m->ngateways == 1 ? "" : "s");
		return -ENOENT;
	}
	b->ngws = 1;
	return 0;
}

static int build_routes(struct build *b)
{
	struct route_table *t = b->t;
	uint32_t *order;
	int err;

	b->routes =
		calloc(b->m->nroutes ? b->m->nroutes : 1, sizeof(*b->routes));
	t->routes =
		calloc(b->m->nroutes ? b->m->nroutes : 1, sizeof(*t->routes));
	t->detached =
		calloc(b->m->nroutes ? b->m->nroutes : 1, sizeof(*t->detached));
	if (!b->routes || !t->routes || !t->detached)
		return -ENOMEM;
	if (b->m->nroutes)
		memcpy(b->routes, b->m->routes,
		       b->m->nroutes * sizeof(*b->routes));
	qsort(b->routes, b->m->nroutes, sizeof(*b->routes), cmp_route_name);
	for (size_t i = 0; i < b->m->nroutes; i++) {
		const struct gw_route *r = b->routes[i];
		uint32_t id = (uint32_t)t->nroutes;
		size_t before = b->natt;
		struct rc_route *rr = &t->routes[id];

		char why[256];

		err = attach_route(b, r, id, &rr->gw_ns, &rr->gw_name, why,
				   sizeof(why));
		if (err)
			return err;
		if (b->natt == before) {
			/* Attached nowhere: not in this table. */
			if (why[0]) {
				struct rc_detached *d =
					&t->detached[t->ndetached++];

				d->src = r;
				snprintf(d->why, sizeof(d->why), "%s", why);
			}
			rr->gw_ns = rr->gw_name = NULL;
			continue;
		}
		rr->src = r;
		rr->ns = r->ns;
		rr->name = r->name;
		rr->uid = r->uid;
		rr->nrules = (uint32_t)r->nrules;
		t->nroutes++;
	}
	order = calloc(t->nroutes ? t->nroutes : 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->nroutes; i++)
		order[i] = i;
	qsort_r(order, t->nroutes, sizeof(*order), cmp_rank, t);
	for (uint32_t i = 0; i < t->nroutes; i++)
		t->routes[order[i]].rank = i;
	free(order);
	return 0;
}

/* The first targetPort a selected Gateway's Service gives port. */
static uint16_t service_port(const struct build *b, uint16_t port)
{
	for (size_t g = 0; g < b->ngws; g++) {
		uint32_t t = gateway_api__target_port(b->m, b->gws[g], port);

		if (t)
			return (uint16_t)t;
	}
	return 0;
}

static int build_one(const struct gw_model *m, const char *gateway,
		     uint32_t gen, struct route_table **out, struct rc_slot *sl,
		     char *err, size_t errlen)
{
	struct build b = { .m = m, .err = err, .errlen = errlen };
	int ret;

	*out = NULL;
	b.t = calloc(1, sizeof(*b.t));
	if (!b.t)
		return -ENOMEM;
	b.t->gen = gen;
	b.t->model = m;
	ret = select_gateways(&b, gateway);
	if (!ret)
		ret = collect_ports(&b);
	if (!ret)
		ret = build_routes(&b);
	if (!ret)
		ret = add_listener_vhosts(&b);
	if (!ret)
		ret = build_vhosts(&b);
	if (!ret)
		ret = build_vhost_keys(&b);
	if (!ret)
		ret = build_route_keys(&b);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory compiling routes");
	if (!ret && sl && b.nports > 1) {
		memcpy(sl->ports, b.ports, b.nports * sizeof(*b.ports));
		sl->nports = b.nports;
		for (size_t i = 0; i < b.nports; i++)
			sl->sports[i] = service_port(&b, b.ports[i]);
	}
	free(b.gws);
	free(b.routes);
	free(b.att);
	if (ret) {
		route_compile__free(b.t);
		return ret;
	}
	*out = b.t;
	return 0;
}

static void *grow_by(void *p, size_t have, size_t add, size_t size)
{
	return realloc(p, (have + add ? have + add : 1) * size);
}

/*
 * Move one slot's table to the end of t: its route and vhost ids shift by
 * what t already holds, its vhost keys take the slot, and the sub-table is
 * left with nothing to free but its own arrays.
 */
static int append_slot(struct route_table *t, struct route_table *sub,
		       uint16_t gw)
{
	uint32_t r0 = (uint32_t)t->nroutes, v0 = (uint32_t)t->nvhosts;
	void *p;

	if (!(p = grow_by(t->routes, t->nroutes, sub->nroutes,
			  sizeof(*t->routes))))
		return -ENOMEM;
	t->routes = p;
	if (!(p = grow_by(t->vhosts, t->nvhosts, sub->nvhosts,
			  sizeof(*t->vhosts))))
		return -ENOMEM;
	t->vhosts = p;
	if (!(p = grow_by(t->detached, t->ndetached, sub->ndetached,
			  sizeof(*t->detached))))
		return -ENOMEM;
	t->detached = p;
	if (!(p = grow_by(t->vhost_keys, t->nvhost_keys, sub->nvhost_keys,
			  sizeof(*t->vhost_keys))))
		return -ENOMEM;
	t->vhost_keys = p;
	if (!(p = grow_by(t->vhost_vals, t->nvhost_keys, sub->nvhost_keys,
			  sizeof(*t->vhost_vals))))
		return -ENOMEM;
	t->vhost_vals = p;
	if (!(p = grow_by(t->route_keys, t->nroute_keys, sub->nroute_keys,
			  sizeof(*t->route_keys))))
		return -ENOMEM;
	t->route_keys = p;
	if (!(p = grow_by(t->route_cands, t->nroute_keys, sub->nroute_keys,
			  sizeof(*t->route_cands))))
		return -ENOMEM;
	t->route_cands = p;
	for (size_t i = 0; i < sub->nroutes; i++) {
		t->routes[t->nroutes] = sub->routes[i];
		t->routes[t->nroutes++].gw = gw;
	}
	for (size_t i = 0; i < sub->nvhosts; i++) {
		struct rc_vhost *vh = &t->vhosts[t->nvhosts++];

		*vh = sub->vhosts[i];
		vh->gw = gw;
		for (size_t e = 0; e < vh->nentries; e++)
			vh->entries[e].route_id += r0;
	}
	sub->nvhosts = 0; /* the hosts and entries moved */
	for (size_t i = 0; i < sub->ndetached; i++)
		t->detached[t->ndetached++] = sub->detached[i];
	for (size_t i = 0; i < sub->nvhost_keys; i++) {
		t->vhost_keys[t->nvhost_keys] = sub->vhost_keys[i];
		t->vhost_keys[t->nvhost_keys].gw = gw;
		t->vhost_vals[t->nvhost_keys] = sub->vhost_vals[i];
		t->vhost_vals[t->nvhost_keys++].vhost_id += v0;
	}
	for (size_t i = 0; i < sub->nroute_keys; i++) {
		struct mm_route_cands *c = &t->route_cands[t->nroute_keys];

		t->route_keys[t->nroute_keys] = sub->route_keys[i];
		t->route_keys[t->nroute_keys++].vhost_id += v0;
		*c = sub->route_cands[i];
		for (uint32_t k = 0; k < c->n && k < MM_ROUTE_CANDS; k++)
			if (c->c[k].route_id != MM_ROUTE_DEFER)
				c->c[k].route_id += r0;
	}
	t->unindexable += sub->unindexable;
	return 0;
}

static int split_name(const char *gateway, char **ns, char **name)
{
	const char *slash = strchr(gateway, '/');

	*ns = slash ? strndup(gateway, (size_t)(slash - gateway)) : NULL;
	*name = slash ? strdup(slash + 1) : NULL;
	return *ns && *name ? 0 : -ENOMEM;
}

int route_compile__build_slots(const struct gw_model *m,
			       const char *const *gateways, size_t n,
			       uint32_t gen, struct route_table **out,
			       char *err, size_t errlen)
{
	struct route_table *t;
	int ret = 0;

	*out = NULL;
	if (errlen)
		err[0] = '\0';
	if (!n || n > MM_GW_SLOTS) {
		snprintf(err, errlen, "%zu gateway slots (1 to %d)", n,
			 MM_GW_SLOTS);
		return -EINVAL;
	}
	t = calloc(1, sizeof(*t));
	if (!t || !(t->slots = calloc(n, sizeof(*t->slots)))) {
		free(t);
		return -ENOMEM;
	}
	t->gen = gen;
	t->model = m;
	for (size_t i = 0; i < n && !ret; i++) {
		struct rc_slot *sl = &t->slots[t->nslots++];
		struct route_table *sub = NULL;

		if (gateways[i] && strchr(gateways[i], '/') &&
		    (ret = split_name(gateways[i], &sl->gw_ns, &sl->gw_name)))
			break;
		sl->route_first = t->nroutes;
		ret = build_one(m, gateways[i], gen, &sub, sl, err, errlen);
		/*
		 * The default table's Gateway must exist (a typo in
		 * --gateway); a Gateway whose pod runs here may not be known
		 * yet: its slot is empty until it is.
		 */
		if (ret == -ENOENT && i) {
			sl->missing = true;
			err[0] = '\0';
			ret = 0;
			continue;
		}
		if (!ret)
			ret = append_slot(t, sub, (uint16_t)i);
		route_compile__free(sub);
		sl->nroutes = t->nroutes - sl->route_first;
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory compiling routes");
	if (ret) {
		route_compile__free(t);
		return ret;
	}
	*out = t;
	return 0;
}

int route_compile__build(const struct gw_model *m, const char *gateway,
			 uint32_t gen, struct route_table **out, char *err,
			 size_t errlen)
{
	return route_compile__build_slots(m, &gateway, 1, gen, out, err,
					  errlen);
}

void route_compile__free(struct route_table *t)
{
	if (!t)
		return;
	for (size_t v = 0; v < t->nvhosts; v++) {
		free((char *)t->vhosts[v].host);
		free(t->vhosts[v].entries);
	}
	free(t->vhosts);
	free(t->routes);
	free(t->detached);
	free(t->vhost_keys);
	free(t->vhost_vals);
	free(t->route_keys);
	free(t->route_cands);
	for (size_t i = 0; i < t->nslots; i++) {
		free(t->slots[i].gw_ns);
		free(t->slots[i].gw_name);
	}
	free(t->slots);
	free(t);
}

bool route_compile__port_keyed(const struct route_table *t, uint32_t gw,
			       uint32_t port)
{
	if (gw >= t->nslots || !port)
		return false;
	for (size_t i = 0; i < t->slots[gw].nports; i++)
		if (t->slots[gw].ports[i] == port)
			return true;
	return false;
}
