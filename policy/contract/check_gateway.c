// SPDX-License-Identifier: Apache-2.0
/* Gateways, HTTPRoutes and Namespaces for `milometer check`: see check_gateway.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/contract/check_gateway.h"
#include "policy/contract/cluster_id.h"
#include "policy/contract/contract.h"
#include "policy/contract/crd_fields.h"
#include "policy/gateway/gateway_api.h"
#include "policy/gateway/route_compile.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"
#include "policy/source/spelling.h"

#define MAX_WARNINGS 32

struct seen {
	const struct mobject *o;
	int err;
	char why[512];
	const struct gw_route *route;
	const struct gw_gateway *gw;
};

struct ctx {
	const struct manifest_source *src;
	struct gw_model *m;
	struct seen *seen;
	size_t nseen;
	size_t gateway_objs; /* Gateway objects read, valid or not */
	bool have_services, have_grants;
	char *warn[MAX_WARNINGS];
	size_t nwarn;
};

static bool in_group(const char *api, const char *group)
{
	size_t len = strlen(group);

	return !strncmp(api, group, len) && api[len] == '/';
}

static bool is_core(const struct mobject *o, const char *kind)
{
	return !strcmp(o->api_version, "v1") && !strcmp(o->kind, kind);
}

static bool is_gw(const struct mobject *o, const char *kind)
{
	return in_group(o->api_version, GW_GROUP) && !strcmp(o->kind, kind);
}

static const char *ns_of(const struct mobject *o)
{
	return o->ns ? o->ns : "default";
}

static void warn(struct ctx *x, const char *file, uint32_t line,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void warn(struct ctx *x, const char *file, uint32_t line,
		 const char *fmt, ...)
{
	char msg[COND_MSG_MAX];
	va_list ap;
	int off;

	if (x->nwarn == MAX_WARNINGS)
		return;
	off = snprintf(msg, sizeof(msg), "%s:%u: ", file, line);
	va_start(ap, fmt);
	vsnprintf(msg + off, sizeof(msg) - off, fmt, ap);
	va_end(ap);
	x->warn[x->nwarn] = strdup(msg);
	if (x->warn[x->nwarn])
		x->nwarn++;
}

static void warn_clear(struct ctx *x)
{
	for (size_t i = 0; i < x->nwarn; i++)
		free(x->warn[i]);
	x->nwarn = 0;
}

/* Line of LIST[i] below root (e.g. "spec.parentRefs"), or fallback. */
static uint32_t item_line(const struct doc_node *root, const char *list,
			  size_t i, uint32_t fallback)
{
	const struct doc_node *l = doc__path(root, list);

	if (!l || l->kind != DOC_LIST || i >= l->list.n)
		return fallback;
	return l->list.items[i]->line;
}

static bool service_exists(const struct ctx *x, const char *ns,
			   const char *name)
{
	const struct mobject *o = NULL;

	while ((o = manifest_source__next(x->src, "Service", o)))
		if (is_core(o, "Service") && o->name &&
		    !strcmp(o->name, name) && !strcmp(ns_of(o), ns))
			return true;
	return false;
}

static bool list_has(const struct doc_node *list, const char *group,
		     const char *kind, const char *key, const char *val,
		     bool absent_ok)
{
	for (size_t i = 0; list && list->kind == DOC_LIST && i < list->list.n;
	     i++) {
		const struct doc_node *it = list->list.items[i];
		const char *g = doc__str(it, "group"),
			   *k = doc__str(it, "kind");
		const char *v = doc__str(it, key);

		if (strcmp(g ? g : "", group) || !k || strcmp(k, kind))
			continue;
		if (v ? !strcmp(v, val) : absent_ok)
			return true;
	}
	return false;
}

/* A ReferenceGrant in to_ns lets HTTPRoutes of from_ns use Service name. */
static bool grant_permits(const struct ctx *x, const char *from_ns,
			  const char *to_ns, const char *name)
{
	const struct mobject *o = NULL;

	while ((o = manifest_source__next(x->src, "ReferenceGrant", o))) {
		if (!is_gw(o, "ReferenceGrant") || strcmp(ns_of(o), to_ns))
			continue;
		if (list_has(doc__path(o->root, "spec.from"), GW_GROUP,
			     "HTTPRoute", "namespace", from_ns, false) &&
		    list_has(doc__path(o->root, "spec.to"), "", "Service",
			     "name", name, true))
			return true;
	}
	return false;
}

/* ResolvedRefs of a route: the first backendRef problem, else True. */
static void resolved_refs(struct ctx *x, const struct seen *s,
			  struct cond_set *cs)
{
	const struct gw_route *r = s->route;
	bool unchecked = false;

	for (size_t k = 0; k < r->nrules; k++) {
		const struct gw_rule *gr = &r->rules[k];
		const struct doc_node *rn = NULL, *rl;

		rl = doc__path(s->o->root, "spec.rules");
		if (rl && rl->kind == DOC_LIST && k < rl->list.n)
			rn = rl->list.items[k];
		for (size_t j = 0; j < gr->nbackends; j++) {
			const struct gw_backend *b = &gr->backends[j];
			uint32_t line =
				rn ? item_line(rn, "backendRefs", j, gr->line)
				   : gr->line;

			if (*b->group || strcmp(b->kind, "Service")) {
				conditions__set(
					cs, COND_RESOLVED_REFS, COND_FALSE,
					"InvalidKind",
					"%s:%u: rule %zu backendRef %s: kind %s%s%s is not supported; use a core Service (group \"\", kind Service)",
					r->file, line, k, b->name, b->group,
					*b->group ? "/" : "", b->kind);
				return;
			}
			if (strcmp(b->ns, r->ns)) {
				if (x->have_grants &&
				    !grant_permits(x, r->ns, b->ns, b->name)) {
					conditions__set(
						cs, COND_RESOLVED_REFS,
						COND_FALSE, "RefNotPermitted",
						"%s:%u: rule %zu backendRef %s/%s is in another namespace and no ReferenceGrant in %s lets HTTPRoutes of %s refer to it; add one",
						r->file, line, k, b->ns,
						b->name, b->ns, r->ns);
					return;
				}
				if (!x->have_grants)
					warn(x, r->file, line,
					     "rule %zu backendRef %s/%s is in another namespace: it needs a ReferenceGrant in %s, and the manifests hold none",
					     k, b->ns, b->name, b->ns);
			}
			if (!x->have_services) {
				unchecked = true;
				continue;
			}
			if (!service_exists(x, b->ns, b->name)) {
				conditions__set(
					cs, COND_RESOLVED_REFS, COND_FALSE,
					"BackendNotFound",
					"%s:%u: rule %zu backendRef Service %s/%s is not in the manifests",
					r->file, line, k, b->ns, b->name);
				return;
			}
		}
	}
	conditions__set(
		cs, COND_RESOLVED_REFS, COND_TRUE, "ResolvedRefs",
		unchecked
			? "backendRefs are Services; the manifests hold no Service to look them up in"
			: "Every backendRef is resolved.");
}

static void join(char *buf, size_t len, const char *s)
{
	size_t off = strlen(buf);

	snprintf(buf + off, len - off, "%s%s", off ? ", " : "", s);
}

static void no_matching_listener(const struct gw_gateway *g,
				 const struct gw_parent_ref *pr,
				 const char *where, struct cond_set *cs)
{
	const char *names[GW_MAX_LISTENERS];
	char have[256] = "", one[96], what[160];
	const char *near = NULL;

	for (size_t l = 0; l < g->nlisteners; l++) {
		names[l] = g->listeners[l].name;
		snprintf(one, sizeof(one), "%s:%u", g->listeners[l].name,
			 g->listeners[l].port);
		join(have, sizeof(have), one);
	}
	if (pr->section)
		near = spelling__closest(pr->section, names, g->nlisteners);
	if (pr->section && pr->port)
		snprintf(what, sizeof(what), "named %s on port %u", pr->section,
			 pr->port);
	else if (pr->section)
		snprintf(what, sizeof(what), "named %s", pr->section);
	else
		snprintf(what, sizeof(what), "on port %u", pr->port);
	conditions__set(
		cs, COND_ACCEPTED, COND_FALSE, "NoMatchingParent",
		"%s: Gateway %s/%s has no listener %s%s%s%s (listeners: %s)",
		where, g->ns, g->name, what, near ? "; did you mean `" : "",
		near ? near : "", near ? "`?" : "", have);
}

/* The Gateway API's Accepted condition of route r towards parentRef pr. */
static void accepted(struct ctx *x, const struct seen *s,
		     const struct gw_parent_ref *pr, const char *where,
		     struct cond_set *cs)
{
	const struct gw_route *r = s->route;
	const struct gw_gateway *g =
		gateway_api__gateway(x->m, pr->ns, pr->name);
	struct rc_parent_attach a;
	char why[192], attached[256] = "";

	for (size_t i = 0; !g && i < x->nseen; i++) {
		const struct seen *o = &x->seen[i];

		if (o->err && is_gw(o->o, "Gateway") && o->o->name &&
		    !strcmp(o->o->name, pr->name) &&
		    !strcmp(ns_of(o->o), pr->ns)) {
			conditions__set(
				cs, COND_ACCEPTED, COND_FALSE,
				"NoMatchingParent",
				"%s: Gateway %s/%s (%s:%u) is invalid; see its conditions",
				where, pr->ns, pr->name, o->o->file,
				o->o->line);
			return;
		}
	}
	if (!g) {
		const char *names[64];
		char *buf[64];
		const char *near;
		size_t n = 0;

		for (size_t i = 0; i < x->m->ngateways && n < 64; i++)
			if (asprintf(&buf[n], "%s/%s", x->m->gateways[i]->ns,
				     x->m->gateways[i]->name) >= 0)
				names[n] = buf[n], n++;
		snprintf(why, sizeof(why), "%s/%s", pr->ns, pr->name);
		near = spelling__closest(why, names, n);
		conditions__set(
			cs, COND_ACCEPTED, COND_FALSE, "NoMatchingParent",
			"%s: Gateway %s/%s is not in the manifests%s%s%s",
			where, pr->ns, pr->name, near ? " (did you mean `" : "",
			near ? near : "", near ? "`?)" : "");
		for (size_t i = 0; i < n; i++)
			free(buf[i]);
		return;
	}
	if (route_compile__attach_parent(x->m, g, r, pr, NULL, NULL, &a))
		return; /* no callback: cannot fail */
	for (size_t l = 0; l < a.nattached; l++)
		join(attached, sizeof(attached), a.attached[l]->name);
	if (!a.matched)
		no_matching_listener(g, pr, where, cs);
	else if (!a.allowed)
		conditions__set(cs, COND_ACCEPTED, COND_FALSE,
				"NotAllowedByListeners", "%s: %s", where,
				a.rejected);
	else if (!a.nattached && a.owner)
		conditions__set(
			cs, COND_ACCEPTED, COND_FALSE,
			"NoMatchingListenerHostname",
			"%s: the route's hostnames on listener %s are listener %s's (%s, more specific, same port %u): requests for them are that listener's",
			where, a.nohost->name, a.owner->name, a.owner->hostname,
			a.nohost->port);
	else if (!a.nattached)
		conditions__set(
			cs, COND_ACCEPTED, COND_FALSE,
			"NoMatchingListenerHostname",
			"%s: no hostname of the route intersects listener %s's hostname %s",
			where, a.nohost->name, a.nohost->hostname);
	else
		conditions__set(cs, COND_ACCEPTED, COND_TRUE, "Accepted",
				"Attached to listener(s) %s.", attached);
}

static void partially_invalid(const struct gw_route *r, struct cond_set *cs)
{
	char msg[COND_MSG_MAX] = "";
	size_t off = 0;

	if (!r->ndropped)
		return;
	/* the Gateway API: the message MUST start with "Dropped Rule" */
	for (size_t k = 0; k < r->nrules && off < sizeof(msg); k++)
		if (r->rules[k].dropped)
			off += snprintf(msg + off, sizeof(msg) - off,
					"%sDropped Rule %zu: %s",
					off ? "; " : "", k,
					r->rules[k].dropped);
	conditions__set(cs, COND_PARTIALLY_INVALID, COND_TRUE,
			"UnsupportedValue", "%s", msg);
}

static int add_route(struct ctx *x, struct contract *c, const struct seen *s,
		     struct contract_object *co)
{
	const struct gw_route *r = s->route;
	struct contract_parent *pp;
	struct cond_set refs = { 0 };
	size_t np = 0;
	int err;

	if (s->err) {
		conditions__set(&co->conds, COND_ACCEPTED, COND_FALSE,
				"UnsupportedValue", "%s", s->why);
		return contract__add_object(c, co);
	}
	pp = calloc(r->nparents + 1, sizeof(*pp));
	if (!pp)
		return -ENOMEM;
	if (!r->nparents)
		warn(x, r->file, r->line,
		     "spec.parentRefs is empty: the route attaches to no Gateway and nothing is counted for it");
	resolved_refs(x, s, &refs);
	for (size_t i = 0; i < r->nparents; i++) {
		const struct gw_parent_ref *pr = &r->parents[i];
		struct contract_parent *p = &pp[np];
		uint32_t line =
			item_line(s->o->root, "spec.parentRefs", i, r->line);
		char where[300];
		int off;

		snprintf(where, sizeof(where), "%s:%u", r->file, line);
		if (strcmp(pr->group, GW_GROUP) ||
		    strcmp(pr->kind, "Gateway")) {
			warn(x, r->file, line,
			     "parentRef %s/%s %s/%s is not a Gateway: milometer counts requests of routes attached to Gateways only",
			     pr->group, pr->kind, pr->ns, pr->name);
			continue;
		}
		if (!gateway_api__gateway(x->m, pr->ns, pr->name) &&
		    !x->gateway_objs) {
			warn(x, r->file, line,
			     "Gateway %s/%s is not in the manifests read (none is): the route's attachment is not checked",
			     pr->ns, pr->name);
			continue;
		}
		off = snprintf(p->ref, sizeof(p->ref), "Gateway %s/%s", pr->ns,
			       pr->name);
		if (pr->section)
			off += snprintf(p->ref + off, sizeof(p->ref) - off,
					" sectionName %s", pr->section);
		if (pr->port)
			snprintf(p->ref + off, sizeof(p->ref) - off, " port %u",
				 pr->port);
		accepted(x, s, pr, where, &p->conds);
		p->conds.c[p->conds.n++] =
			*conditions__get(&refs, COND_RESOLVED_REFS);
		partially_invalid(r, &p->conds);
		np++;
	}
	if (!np) {
		/* no parent to report against: the route's own findings */
		partially_invalid(r, &co->conds);
		if (conditions__get(&refs, COND_RESOLVED_REFS)->status ==
		    COND_FALSE)
			co->conds.c[co->conds.n++] =
				*conditions__get(&refs, COND_RESOLVED_REFS);
	}
	co->parents = pp;
	co->nparents = np;
	co->warnings = (const char *const *)x->warn;
	co->nwarnings = x->nwarn;
	err = contract__add_object(c, co);
	free(pp);
	return err;
}

static void gateway_conds(struct ctx *x, const struct seen *s,
			  struct cond_set *cs)
{
	const struct gw_gateway *g = s->gw;
	char have[256] = "", one[96];

	if (s->err) {
		conditions__set(cs, COND_ACCEPTED, COND_FALSE, "Invalid", "%s",
				s->why);
		return;
	}
	for (size_t l = 0; l < g->nlisteners; l++) {
		const struct gw_listener *li = &g->listeners[l];

		snprintf(one, sizeof(one), "%s:%u %s", li->name, li->port,
			 li->protocol);
		join(have, sizeof(have), one);
		if (strcmp(li->protocol, "HTTP") &&
		    strcmp(li->protocol, "HTTPS"))
			warn(x, g->file,
			     item_line(s->o->root, "spec.listeners", l,
				       g->line),
			     "listener %s is %s: milometer measures HTTP and HTTPS listeners only",
			     li->name, li->protocol);
	}
	conditions__set(cs, COND_ACCEPTED, COND_TRUE, "Accepted",
			"Listeners %s.", have);
}

static bool read_elsewhere(const struct mobject *o)
{
	/*
	 * the contract's own kinds, what backendRefs are resolved with, and
	 * the CRDs whose schemas policies' subjects are checked against
	 */
	return in_group(o->api_version, CRD_GROUP) ||
	       cluster_id__is_property(o) || is_core(o, "Service") ||
	       is_gw(o, "ReferenceGrant") ||
	       (in_group(o->api_version, "apiextensions.k8s.io") &&
		!strcmp(o->kind, "CustomResourceDefinition"));
}

static int read_objects(struct ctx *x, struct contract *c)
{
	const struct mobject *o = NULL;

	while ((o = manifest_source__next(x->src, NULL, o))) {
		struct seen *s;
		char note[512];
		int err;

		x->have_services |= is_core(o, "Service");
		x->have_grants |= is_gw(o, "ReferenceGrant");
		if (!is_gw(o, "Gateway") && !is_gw(o, "HTTPRoute") &&
		    !is_core(o, "Namespace")) {
			if (read_elsewhere(o))
				continue;
			snprintf(
				note, sizeof(note),
				"%s:%u: %s %s%s%s (%s): skipped: milometer reads Gateway, HTTPRoute, Namespace, MetricDefinition, MetricPolicy and ClusterProperty objects",
				o->file, o->line, o->kind, o->ns ? o->ns : "",
				o->ns ? "/" : "", o->name ? o->name : "",
				o->api_version);
			if (contract__add_skipped(c, note))
				return -ENOMEM;
			continue;
		}
		s = &x->seen[x->nseen++];
		s->o = o;
		x->gateway_objs += is_gw(o, "Gateway");
		err = gateway_api__add_doc(x->m, o->root, s->why,
					   sizeof(s->why));
		if (err == -ENOMEM)
			return err;
		s->err = err;
		if (err)
			continue;
		if (is_gw(o, "HTTPRoute"))
			s->route = x->m->routes[x->m->nroutes - 1];
		else if (is_gw(o, "Gateway"))
			s->gw = x->m->gateways[x->m->ngateways - 1];
	}
	return 0;
}

int check_gateway__validate(const struct manifest_source *src,
			    struct contract *c)
{
	struct ctx x = { .src = src };
	int err = -ENOMEM;

	x.m = gateway_api__new();
	x.seen = calloc(manifest_source__count(src) + 1, sizeof(*x.seen));
	if (!x.m || !x.seen)
		goto out;
	err = read_objects(&x, c);
	for (size_t i = 0; !err && i < x.nseen; i++) {
		const struct seen *s = &x.seen[i];
		struct contract_object co = {
			.kind = s->o->kind,
			.name = s->o->name ? s->o->name : "",
			.file = s->o->file,
			.line = s->o->line,
		};

		co.ns = is_core(s->o, "Namespace") ? NULL : ns_of(s->o);
		if (is_gw(s->o, "HTTPRoute")) {
			err = add_route(&x, c, s, &co);
		} else {
			if (is_gw(s->o, "Gateway"))
				gateway_conds(&x, s, &co.conds);
			else if (s->err)
				conditions__set(&co.conds, COND_ACCEPTED,
						COND_FALSE, "Invalid", "%s",
						s->why);
			else
				conditions__set(
					&co.conds, COND_ACCEPTED, COND_TRUE,
					"Accepted",
					"Its labels select routes for allowedRoutes selectors.");
			co.warnings = (const char *const *)x.warn;
			co.nwarnings = x.nwarn;
			err = contract__add_object(c, &co);
		}
		warn_clear(&x);
	}
out:
	warn_clear(&x);
	free(x.seen);
	gateway_api__free(x.m);
	return err;
}
