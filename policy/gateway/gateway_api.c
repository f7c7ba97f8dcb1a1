// SPDX-License-Identifier: Apache-2.0
/*
 * Gateway and HTTPRoute manifests -> struct gw_model: model lifecycle,
 * Gateways, dispatch by kind, directory loading. HTTPRoutes are read in
 * gateway_api_route.c, field readers are in gateway_api_fields.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/milometer.h"
#include "policy/gateway/gateway_api_fields.h"
#include "policy/source/manifest_source.h"

struct gw_model *gateway_api__new(void)
{
	return calloc(1, sizeof(struct gw_model));
}

void gateway_api__free(struct gw_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nregexes; i++) {
		regex__free(m->regexes[i]);
	}
	free(m->regexes);
	for (size_t i = 0; i < m->nrejected; i++)
		free(m->rejected[i]);
	free(m->rejected);
	free(m->gateways);
	free(m->namespaces);
	free(m->services);
	free(m->routes);
	gateway_api_fields__arena_free(m->arena);
	free(m);
}

static int allowed_routes(struct gw_ctx *c, const struct doc_node *ln,
			  struct gw_listener *l)
{
	const struct doc_node *ar, *ns, *kinds;
	const char *from = "Same";
	int err;

	l->from = GW_FROM_SAME;
	l->allows_httproute = true;
	err = gateway_api_fields__opt_map(c, ln, "allowedRoutes", "listener",
					  &ar);
	if (err || !ar)
		return err;
	err = gateway_api_fields__opt_map(c, ar, "namespaces", "allowedRoutes",
					  &ns);
	if (!err && ns)
		err = gateway_api_fields__opt_str(c, ns, "from", "namespaces",
						  &from);
	if (!err)
		err = gateway_api_fields__opt_list(c, ar, "kinds",
						   "allowedRoutes", &kinds);
	if (err)
		return err;
	if (!strcmp(from, "All")) {
		l->from = GW_FROM_ALL;
	} else if (!strcmp(from, "Selector")) {
		l->from = GW_FROM_SELECTOR;
		err = gateway_ns__selector(c, ns, &l->selector);
		if (err)
			return err;
	} else if (strcmp(from, "Same"))
		return gateway_api_fields__bad(
			c, ns,
			"namespaces.from \"%s\": use Same, All or "
			"Selector",
			from);
	if (kinds && kinds->list.n) {
		l->allows_httproute = false;
		for (size_t i = 0; i < kinds->list.n; i++) {
			const char *k = doc__str(kinds->list.items[i], "kind");
			const char *g = doc__str(kinds->list.items[i], "group");

			if (k && !strcmp(k, "HTTPRoute") &&
			    (!g || !strcmp(g, GW_GROUP)))
				l->allows_httproute = true;
		}
	}
	return 0;
}

static int add_gateway(struct gw_ctx *c, const struct doc_node *root)
{
	struct gw_gateway *g = gateway_api_fields__alloc(c->m, sizeof(*g));
	const struct doc_node *spec, *ll;
	struct gw_gateway **grown;
	int err;

	if (!g)
		return gateway_api_fields__oom(c);
	g->file = c->file;
	g->line = root->line;
	err = gateway_api_fields__metadata(c, root, "Gateway", &g->ns,
					   &g->name);
	if (!err)
		err = gateway_api_fields__opt_map(c, root, "spec", "Gateway",
						  &spec);
	if (err)
		return err;
	if (!spec)
		return gateway_api_fields__bad(
			c, root, "Gateway %s/%s: spec is required", g->ns,
			g->name);
	err = gateway_api_fields__opt_list(c, spec, "listeners", "spec", &ll);
	if (!err)
		err = gateway_api_fields__max_items(c, ll, GW_MAX_LISTENERS,
						    "spec.listeners");
	if (err)
		return err;
	if (!ll || !ll->list.n)
		return gateway_api_fields__bad(
			c, spec,
			"Gateway %s/%s: spec.listeners needs at "
			"least one listener",
			g->ns, g->name);
	g->listeners = gateway_api_fields__array(c->m, ll->list.n,
						 sizeof(*g->listeners));
	if (!g->listeners)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; i < ll->list.n; i++) {
		const struct doc_node *ln = ll->list.items[i], *h;
		struct gw_listener *l = &g->listeners[i];

		err = gateway_api_fields__item_map(c, ln, "listeners", i);
		if (!err)
			err = gateway_api_fields__req_str(c, ln, "name",
							  "listener", &l->name);
		if (!err)
			err = gateway_api_fields__req_str(
				c, ln, "protocol", "listener", &l->protocol);
		if (!err)
			err = gateway_api_fields__opt_port(
				c, ln, "port", "listener", &l->port);
		if (!err && !l->port)
			err = gateway_api_fields__bad(
				c, ln, "listener.port is required");
		if (err)
			return err;
		h = doc__get(ln, "hostname");
		if (h && h->kind != DOC_NULL) {
			err = gateway_api_fields__hostname(
				c, h, "listener.hostname", &l->hostname);
			if (err)
				return err;
		}
		err = allowed_routes(c, ln, l);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(g->listeners[j].name, l->name))
				return gateway_api_fields__bad(
					c, ln,
					"listener name \"%s\" is "
					"used twice",
					l->name);
	}
	g->nlisteners = ll->list.n;
	if (gateway_api__gateway(c->m, g->ns, g->name)) {
		gateway_api_fields__bad(c, root,
					"Gateway %s/%s is defined twice", g->ns,
					g->name);
		return -EEXIST;
	}
	grown = realloc(c->m->gateways, (c->m->ngateways + 1) * sizeof(*grown));
	if (!grown)
		return gateway_api_fields__oom(c);
	c->m->gateways = grown;
	grown[c->m->ngateways++] = g;
	return 0;
}

int gateway_api__add_doc(struct gw_model *m, const struct doc_node *root,
			 char *err, size_t errlen)
{
	struct gw_ctx c = { .m = m, .err = err, .errlen = errlen };
	const char *api, *kind;

	if (!root || root->kind == DOC_NULL)
		return 0; /* an empty "---" document */
	c.file = root->file ? gateway_api_fields__strdup(m, root->file)
			    : "<doc>";
	if (!c.file)
		return gateway_api_fields__oom(&c);
	if (root->kind != DOC_MAP)
		return gateway_api_fields__bad(
			&c, root, "a manifest must be a mapping, not %s",
			doc__kind_name(root->kind));
	api = doc__str(root, "apiVersion");
	kind = doc__str(root, "kind");
	if (!api || !kind)
		return gateway_api_fields__bad(
			&c, root,
			"manifest needs string apiVersion and "
			"kind");
	/* `kubectl get -o yaml` writes a v1 List: its items are the objects */
	if (!strcmp(kind, "List") && !strcmp(api, "v1")) {
		const struct doc_node *items = doc__get(root, "items");

		if (!items || items->kind == DOC_NULL)
			return 0;
		if (items->kind != DOC_LIST)
			return gateway_api_fields__bad(
				&c, items, "List: items must be a list");
		for (size_t i = 0; i < items->list.n; i++) {
			const struct doc_node *it = items->list.items[i];
			int rc;

			if (it->kind == DOC_MAP && doc__str(it, "kind") &&
			    !strcmp(doc__str(it, "kind"), "List"))
				return gateway_api_fields__bad(
					&c, it,
					"a List inside a List is not supported");
			rc = gateway_api__add_doc(m, it, err, errlen);
			if (rc)
				return rc;
		}
		return 0;
	}
	if (doc__count(root, DOC_MAX_OBJECT_NODES) > DOC_MAX_OBJECT_NODES)
		return gateway_api_fields__bad(
			&c, root, "%s holds more than %d YAML nodes", kind,
			DOC_MAX_OBJECT_NODES);
	if (!strcmp(api, "v1") && !strcmp(kind, "Namespace"))
		return gateway_ns__add(&c, root);
	if (!strcmp(api, "v1") && !strcmp(kind, "Service"))
		return gateway_svc__add(&c, root);
	if (strncmp(api, GW_GROUP "/", sizeof(GW_GROUP))) {
		m->skipped++;
		return 0;
	}
	if (!strcmp(kind, "HTTPRoute"))
		return gateway_api_route__add(&c, root);
	if (!strcmp(kind, "Gateway"))
		return add_gateway(&c, root);
	m->skipped++;
	return 0;
}

static int reject(struct gw_model *m, const char *why)
{
	char **grown =
		realloc(m->rejected, (m->nrejected + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	m->rejected = grown;
	grown[m->nrejected] = strdup(why);
	if (!grown[m->nrejected])
		return -ENOMEM;
	m->nrejected++;
	return 0;
}

int gateway_api__load_source(struct gw_model *m,
			     const struct manifest_source *src, char *err,
			     size_t errlen)
{
	const struct mobject *o = NULL;
	int ret = 0;

	for (size_t i = 0; !ret && i < manifest_source__nerrors(src); i++)
		ret = reject(m, manifest_source__error(src, i));
	while (!ret && (o = manifest_source__next(src, NULL, o))) {
		ret = gateway_api__add_doc(m, o->root, err, errlen);
		if (ret && ret != -ENOMEM)
			ret = reject(m, err);
	}
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	return ret;
}

int gateway_api__load_dir(struct gw_model *m, const char *dir, char *err,
			  size_t errlen)
{
	struct manifest_source *src;
	int ret;

	/* the file list and parser `check` and the contract read */
	src = manifest_source__open_paths(&dir, 1, err, errlen);
	if (!src)
		return -ENOENT;
	ret = gateway_api__load_source(m, src, err, errlen);
	manifest_source__free(src);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", dir);
	return ret;
}

size_t gateway_api__log_dropped(const struct gw_model *m, FILE *f,
				const char *prefix)
{
	size_t n = 0;

	for (size_t i = 0; i < m->nroutes; i++) {
		const struct gw_route *r = m->routes[i];

		n += r->ndropped;
		for (size_t k = 0; f && r->ndropped && k < r->nrules; k++)
			if (r->rules[k].dropped)
				fprintf(f,
					"%sHTTPRoute %s/%s: Dropped Rule %zu: %s\n",
					prefix, r->ns, r->name, k,
					r->rules[k].dropped);
	}
	return n;
}

const struct gw_gateway *gateway_api__gateway(const struct gw_model *m,
					      const char *ns, const char *name)
{
	for (size_t i = 0; i < m->ngateways; i++)
		if (!strcmp(m->gateways[i]->ns, ns) &&
		    !strcmp(m->gateways[i]->name, name))
			return m->gateways[i];
	return NULL;
}
