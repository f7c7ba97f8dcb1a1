// SPDX-License-Identifier: Apache-2.0
/*
 * HTTPRoute manifests -> struct gw_route, with the CRD's defaults applied
 * and its validations enforced (see gateway_api.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/milometer.h"
#include "policy/gateway/gateway_api_fields.h"
#include "policy/gateway/http_method.h"
#include "policy/source/rfc3339.h"
#include "policy/source/spelling.h"

static int kv_matches(struct gw_ctx *c, const struct doc_node *list,
		      const char *what, bool fold_names,
		      struct gw_kv_match **out, size_t *nout)
{
	struct gw_kv_match *kv;
	size_t n = 0;
	int err;

	*out = NULL;
	*nout = 0;
	if (!list)
		return 0;
	err = gateway_api_fields__max_items(
		c, list, fold_names ? GW_MAX_HEADERS : GW_MAX_QUERY_PARAMS,
		what);
	if (err)
		return err;
	kv = gateway_api_fields__array(c->m, list->list.n, sizeof(*kv));
	if (!kv)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; i < list->list.n; i++) {
		const struct doc_node *it = list->list.items[i];
		const char *type = "Exact", *name, *value;
		bool dup = false;

		err = gateway_api_fields__item_map(c, it, what, i);
		if (!err)
			err = gateway_api_fields__req_str(c, it, "name", what,
							  &name);
		if (!err)
			err = gateway_api_fields__opt_str(c, it, "type", what,
							  &type);
		if (!err) {
			value = NULL;
			err = gateway_api_fields__opt_str(c, it, "value", what,
							  &value);
			if (!err && !value)
				err = gateway_api_fields__bad(
					c, it, "%s.value is required", what);
		}
		if (err)
			return err;
		if (strlen(name) > GW_MAX_HEADER_NAME ||
		    strlen(value) > GW_MAX_HEADER_VALUE)
			return gateway_api_fields__bad(
				c, it,
				"%s: name longer than %d or value longer "
				"than %d bytes (the Gateway API's maxLength)",
				what, GW_MAX_HEADER_NAME, GW_MAX_HEADER_VALUE);
		if (fold_names)
			for (char *p = (char *)name; *p; p++)
				*p = tolower((unsigned char)*p);
		/*
		 * "If multiple entries specify equivalent header names, only
		 * the first entry with an equivalent name MUST be considered"
		 * (same for query params): later duplicates are dropped and
		 * do not count towards the match-count precedence.
		 */
		for (size_t j = 0; j < n; j++)
			dup |= !strcmp(kv[j].name, name);
		if (dup)
			continue;
		kv[n].name = name;
		kv[n].value = value;
		if (!strcmp(type, "Exact")) {
			kv[n].type = GW_VALUE_EXACT;
		} else if (!strcmp(type, "RegularExpression")) {
			kv[n].type = GW_VALUE_REGEX;
			err = gateway_api_fields__compile_re(c, it, value,
							     &kv[n].re);
			if (err)
				return err;
		} else {
			static const char *const types[] = {
				"Exact", "RegularExpression"
			};
			const char *near = spelling__closest(type, types, 2);

			return gateway_api_fields__bad(
				c, doc__get(it, "type"),
				"%s.type \"%s\"%s%s%s: use Exact or "
				"RegularExpression",
				what, type, near ? " (did you mean `" : "",
				near ? near : "", near ? "`?)" : "");
		}
		n++;
	}
	*out = kv;
	*nout = n;
	return 0;
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t n = strlen(s), m = strlen(sfx);

	return n >= m && !strcmp(s + n - m, sfx);
}

static int path_match(struct gw_ctx *c, const struct doc_node *mn,
		      struct gw_match *gm)
{
	const struct doc_node *p;
	const char *type = "PathPrefix", *value = "/";
	int err;

	err = gateway_api_fields__opt_map(c, mn, "path", "match", &p);
	if (err)
		return err;
	if (p) {
		err = gateway_api_fields__opt_str(c, p, "type", "path", &type);
		if (!err)
			err = gateway_api_fields__opt_str(c, p, "value", "path",
							  &value);
		if (err)
			return err;
	}
	gm->path = value;
	if (strlen(value) > GW_MAX_PATH_LEN)
		return gateway_api_fields__bad(
			c, p,
			"path.value is %zu bytes; the Gateway API allows at "
			"most %d",
			strlen(value), GW_MAX_PATH_LEN);
	if (!strcmp(type, "Exact")) {
		gm->path_type = GW_PATH_EXACT;
	} else if (!strcmp(type, "PathPrefix")) {
		gm->path_type = GW_PATH_PREFIX;
	} else if (!strcmp(type, "RegularExpression")) {
		gm->path_type = GW_PATH_REGEX;
		return gateway_api_fields__compile_re(c, p, value,
						      &gm->path_re);
	} else {
		static const char *const types[] = { "Exact", "PathPrefix",
						     "RegularExpression" };
		const char *near = spelling__closest(type, types, 3);

		return gateway_api_fields__bad(
			c, doc__get(p, "type"),
			"path.type \"%s\" is not a Gateway API path match "
			"type%s%s%s; use Exact, PathPrefix or "
			"RegularExpression",
			type, near ? " (did you mean `" : "", near ? near : "",
			near ? "`?)" : "");
	}
	if (value[0] != '/')
		return gateway_api_fields__bad(
			c, p, "path.value \"%s\" must start with '/'", value);
	/*
	 * The CRD's validations (httproute_types.go): a client never sends
	 * such a path to a proxy that normalises, so it could never match.
	 */
	if (strstr(value, "//") || strstr(value, "/./") ||
	    strstr(value, "/../") || strcasestr(value, "%2f") ||
	    strchr(value, '?') || strchr(value, '#') ||
	    ends_with(value, "/..") || ends_with(value, "/."))
		return gateway_api_fields__bad(
			c, p,
			"path.value \"%s\" must not contain '//', "
			"'/./', '/../', '%%2F', '?' or '#', nor end in "
			"'/.' or '/..'",
			value);
	return 0;
}

static int one_match(struct gw_ctx *c, const struct doc_node *mn,
		     struct gw_match *gm)
{
	const struct doc_node *hl, *ql;
	const char *method = NULL;
	int err;

	gm->line = mn ? mn->line : 0;
	gm->method = MM_M_ANY;
	gm->path_type = GW_PATH_PREFIX;
	gm->path = "/";
	if (!mn)
		return 0;
	err = path_match(c, mn, gm);
	if (!err)
		err = gateway_api_fields__opt_str(c, mn, "method", "match",
						  &method);
	if (err)
		return err;
	if (method) {
		gm->method = http_method__parse(method, strlen(method));
		if (gm->method == MM_M_OTHER)
			return gateway_api_fields__bad(
				c, doc__get(mn, "method"),
				"match.method \"%s\": use GET, HEAD, POST, "
				"PUT, DELETE, CONNECT, OPTIONS, TRACE or "
				"PATCH",
				method);
	}
	err = gateway_api_fields__opt_list(c, mn, "headers", "match", &hl);
	if (!err)
		err = kv_matches(c, hl, "headers", true, &gm->headers,
				 &gm->nheaders);
	if (!err)
		err = gateway_api_fields__opt_list(c, mn, "queryParams",
						   "match", &ql);
	if (!err)
		err = kv_matches(c, ql, "queryParams", false, &gm->query,
				 &gm->nquery);
	return err;
}

static int backends(struct gw_ctx *c, const struct gw_route *r,
		    const struct doc_node *rn, struct gw_rule *gr)
{
	const struct doc_node *bl;
	int err;

	err = gateway_api_fields__opt_list(c, rn, "backendRefs", "rule", &bl);
	if (!err)
		err = gateway_api_fields__max_items(c, bl, GW_MAX_BACKEND_REFS,
						    "rule.backendRefs");
	if (!err)
		err = gateway_api_fields__max_items(c, doc__get(rn, "filters"),
						    GW_MAX_FILTERS,
						    "rule.filters");
	if (err || !bl)
		return err;
	gr->backends = gateway_api_fields__array(c->m, bl->list.n,
						 sizeof(*gr->backends));
	if (!gr->backends)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; i < bl->list.n; i++) {
		const struct doc_node *b = bl->list.items[i];
		const struct doc_node *w;
		struct gw_backend *gb = &gr->backends[i];

		gb->ns = r->ns;
		gb->group = "";
		gb->kind = "Service";
		gb->weight = 1;
		err = gateway_api_fields__item_map(c, b, "backendRefs", i);
		if (!err)
			err = gateway_api_fields__req_str(
				c, b, "name", "backendRef", &gb->name);
		if (!err)
			err = gateway_api_fields__opt_str(
				c, b, "group", "backendRef", &gb->group);
		if (!err)
			err = gateway_api_fields__opt_str(
				c, b, "kind", "backendRef", &gb->kind);
		if (!err)
			err = gateway_api_fields__opt_str(
				c, b, "namespace", "backendRef", &gb->ns);
		if (!err)
			err = gateway_api_fields__opt_port(
				c, b, "port", "backendRef", &gb->port);
		if (err)
			return err;
		w = doc__get(b, "weight");
		if (w && w->kind != DOC_NULL) {
			if (w->kind != DOC_INT || w->i < 0 || w->i > 1000000)
				return gateway_api_fields__bad(
					c, w,
					"backendRef.weight must be "
					"an integer 0..1000000");
			gb->weight = (uint32_t)w->i;
		}
	}
	gr->nbackends = bl->list.n;
	return 0;
}

/*
 * One rule's matches and backendRefs. -EINVAL leaves the rule for the
 * caller to drop: the Gateway API's PartiallyInvalid "Drop Rule(s)"
 * approach, so a bad regular expression costs its rule, never its route.
 */
static int one_rule(struct gw_ctx *c, struct gw_route *r,
		    const struct doc_node *rn, struct gw_rule *gr,
		    size_t *total)
{
	const struct doc_node *ml = NULL;
	int err;

	if (rn) {
		err = gateway_api_fields__item_map(c, rn, "rules",
						   (size_t)(gr - r->rules));
		if (!err)
			err = gateway_api_fields__opt_list(c, rn, "matches",
							   "rule", &ml);
		if (!err)
			err = gateway_api_fields__max_items(
				c, ml, GW_MAX_MATCHES, "rule.matches");
		if (err)
			return err;
		gr->line = rn->line;
	}
	/* A rule without matches matches PathPrefix "/". */
	gr->nmatches = ml && ml->list.n ? ml->list.n : 1;
	*total += gr->nmatches;
	gr->matches = gateway_api_fields__array(c->m, gr->nmatches,
						sizeof(*gr->matches));
	if (!gr->matches)
		return gateway_api_fields__oom(c);
	for (size_t j = 0; j < gr->nmatches; j++) {
		const struct doc_node *mn = NULL;

		if (ml && ml->list.n) {
			mn = ml->list.items[j];
			err = gateway_api_fields__item_map(c, mn, "matches", j);
			if (err)
				return err;
		}
		err = one_match(c, mn, &gr->matches[j]);
		if (err)
			return err;
		if (!mn)
			gr->matches[j].line = gr->line;
	}
	return rn ? backends(c, r, rn, gr) : 0;
}

static int rules(struct gw_ctx *c, struct gw_route *r,
		 const struct doc_node *spec)
{
	const struct doc_node *rl;
	size_t total = 0;
	int err, first_err = 0;
	const char *first = NULL;

	err = gateway_api_fields__opt_list(c, spec, "rules", "spec", &rl);
	if (!err)
		err = gateway_api_fields__max_items(c, rl, GW_MAX_RULES,
						    "spec.rules");
	if (err)
		return err;
	/* CRD default: one rule matching PathPrefix "/". */
	r->nrules = rl ? rl->list.n : 1;
	r->rules =
		gateway_api_fields__array(c->m, r->nrules, sizeof(*r->rules));
	if (!r->rules)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; i < r->nrules; i++) {
		const struct doc_node *rn = rl ? rl->list.items[i] : NULL;
		struct gw_rule *gr = &r->rules[i];

		err = one_rule(c, r, rn, gr, &total);
		if (err == -ENOMEM)
			return err;
		if (!err)
			continue;
		/* kept in place, so rule indexes (and cluster names) hold */
		gr->dropped = gateway_api_fields__strdup(c->m, c->err);
		if (!gr->dropped)
			return gateway_api_fields__oom(c);
		gr->nmatches = 0;
		gr->nbackends = 0;
		gr->line = rn ? rn->line : r->line;
		r->ndropped++;
		if (!first) {
			first = gr->dropped;
			first_err = err;
		}
	}
	if (total > GW_MAX_ROUTE_MATCHES)
		return gateway_api_fields__bad(
			c, rl,
			"spec.rules hold more than %d matches in all; "
			"the Gateway API allows at most %d per route "
			"(16 rules of 64 matches are allowed, but not "
			"all at once)",
			GW_MAX_ROUTE_MATCHES, GW_MAX_ROUTE_MATCHES);
	if (r->ndropped == r->nrules) {
		/* nothing left to attach: the route is rejected as a whole */
		snprintf(c->err, c->errlen, "%s", first);
		return first_err;
	}
	return 0;
}

static int parent_refs(struct gw_ctx *c, struct gw_route *r,
		       const struct doc_node *spec)
{
	const struct doc_node *pl;
	int err;

	err = gateway_api_fields__opt_list(c, spec, "parentRefs", "spec", &pl);
	if (!err)
		err = gateway_api_fields__max_items(c, pl, GW_MAX_PARENT_REFS,
						    "spec.parentRefs");
	if (err || !pl)
		return err;
	r->parents = gateway_api_fields__array(c->m, pl->list.n,
					       sizeof(*r->parents));
	if (!r->parents)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; i < pl->list.n; i++) {
		const struct doc_node *p = pl->list.items[i];
		struct gw_parent_ref *pr = &r->parents[i];

		pr->group = GW_GROUP;
		pr->kind = "Gateway";
		pr->ns = r->ns;
		err = gateway_api_fields__item_map(c, p, "parentRefs", i);
		if (!err)
			err = gateway_api_fields__req_str(
				c, p, "name", "parentRef", &pr->name);
		if (!err)
			err = gateway_api_fields__opt_str(
				c, p, "group", "parentRef", &pr->group);
		if (!err)
			err = gateway_api_fields__opt_str(
				c, p, "kind", "parentRef", &pr->kind);
		if (!err)
			err = gateway_api_fields__opt_str(c, p, "namespace",
							  "parentRef", &pr->ns);
		if (!err)
			err = gateway_api_fields__opt_str(
				c, p, "sectionName", "parentRef", &pr->section);
		if (!err)
			err = gateway_api_fields__opt_port(
				c, p, "port", "parentRef", &pr->port);
		if (err)
			return err;
	}
	r->nparents = pl->list.n;
	return 0;
}

int gateway_api_route__add(struct gw_ctx *c, const struct doc_node *root)
{
	struct gw_route *r = gateway_api_fields__alloc(c->m, sizeof(*r));
	const struct doc_node *spec, *hl, *md;
	struct gw_route **grown;
	uint32_t created_ns;
	int err;

	if (!r)
		return gateway_api_fields__oom(c);
	r->file = c->file;
	r->line = root->line;
	r->uid = "";
	err = gateway_api_fields__metadata(c, root, "HTTPRoute", &r->ns,
					   &r->name);
	if (err)
		return err;
	md = doc__get(root, "metadata");
	err = gateway_api_fields__opt_str(c, md, "uid", "metadata", &r->uid);
	if (!err)
		err = gateway_api_fields__opt_str(c, md, "creationTimestamp",
						  "metadata", &r->created);
	if (err)
		return err;
	if (r->created && rfc3339__parse(r->created, strlen(r->created),
					 &r->created_s, &created_ns))
		return gateway_api_fields__bad(
			c, doc__get(md, "creationTimestamp"),
			"metadata.creationTimestamp \"%s\" is not RFC 3339 "
			"(2024-05-01T10:00:00Z)",
			r->created);
	err = gateway_api_fields__opt_map(c, root, "spec", "HTTPRoute", &spec);
	if (err)
		return err;
	if (!spec)
		return gateway_api_fields__bad(
			c, root, "HTTPRoute %s/%s: spec is required", r->ns,
			r->name);
	err = gateway_api_fields__opt_list(c, spec, "hostnames", "spec", &hl);
	if (!err)
		err = gateway_api_fields__max_items(c, hl, GW_MAX_HOSTNAMES,
						    "spec.hostnames");
	if (err)
		return err;
	if (hl) {
		r->hostnames = gateway_api_fields__array(c->m, hl->list.n,
							 sizeof(*r->hostnames));
		if (!r->hostnames)
			return gateway_api_fields__oom(c);
		for (size_t i = 0; i < hl->list.n; i++) {
			err = gateway_api_fields__hostname(c, hl->list.items[i],
							   "spec.hostnames[]",
							   &r->hostnames[i]);
			if (err)
				return err;
		}
		r->nhostnames = hl->list.n;
	}
	err = parent_refs(c, r, spec);
	if (!err)
		err = rules(c, r, spec);
	if (err)
		return err;
	for (size_t i = 0; i < c->m->nroutes; i++)
		if (!strcmp(c->m->routes[i]->ns, r->ns) &&
		    !strcmp(c->m->routes[i]->name, r->name)) {
			gateway_api_fields__bad(
				c, root,
				"HTTPRoute %s/%s is already defined at "
				"%s:%u",
				r->ns, r->name, c->m->routes[i]->file,
				c->m->routes[i]->line);
			return -EEXIST;
		}
	grown = realloc(c->m->routes, (c->m->nroutes + 1) * sizeof(*grown));
	if (!grown)
		return gateway_api_fields__oom(c);
	c->m->routes = grown;
	grown[c->m->nroutes++] = r;
	return 0;
}
