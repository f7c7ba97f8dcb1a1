// SPDX-License-Identifier: Apache-2.0
/*
 * Namespaces and label selectors, for listeners with allowedRoutes
 * namespaces.from: Selector (Gateway API v1): a Namespace's labels (v1
 * Namespace objects, from the API or the manifests) against the listener's
 * metav1.LabelSelector (matchLabels AND matchExpressions In / NotIn /
 * Exists / DoesNotExist; an empty selector selects every namespace).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/gateway_api.h"
#include "policy/gateway/gateway_api_fields.h"

/* metav1: label keys are at most 253 + 1 + 63, values 63, both strings */
#define NS_MAX_LABELS 256
#define NS_MAX_VALUES 256

/* The labels of map, in an array with one slot to spare. */
static int labels_of(struct gw_ctx *c, const struct doc_node *map,
		     const char *what, struct gw_label **out, size_t *n)
{
	size_t cnt = map && map->kind == DOC_MAP ? map->map.n : 0;
	struct gw_label *l;

	*n = 0;
	*out = l = gateway_api_fields__array(c->m, cnt + 1, sizeof(*l));
	if (!l)
		return gateway_api_fields__oom(c);
	if (!map || map->kind == DOC_NULL)
		return 0;
	if (map->kind != DOC_MAP)
		return gateway_api_fields__bad(c, map, "%s must be a mapping",
					       what);
	if (map->map.n > NS_MAX_LABELS)
		return gateway_api_fields__bad(
			c, map, "%s: more than %d labels", what, NS_MAX_LABELS);
	for (size_t i = 0; i < map->map.n; i++) {
		const struct doc_node *v = map->map.vals[i];

		if (v->kind != DOC_STRING)
			return gateway_api_fields__bad(
				c, v,
				"%s.%s: label values are strings (quote it)",
				what, map->map.keys[i]);
		l[i].key = gateway_api_fields__strdup(c->m, map->map.keys[i]);
		l[i].value = gateway_api_fields__strdup(c->m, v->str.s);
		if (!l[i].key || !l[i].value)
			return gateway_api_fields__oom(c);
	}
	*n = cnt;
	return 0;
}

static const char *label(const struct gw_label *l, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].key, key))
			return l[i].value;
	return NULL;
}

int gateway_ns__add(struct gw_ctx *c, const struct doc_node *root)
{
	struct gw_namespace *ns, **grown;
	const struct doc_node *md;
	int err;

	ns = gateway_api_fields__alloc(c->m, sizeof(*ns));
	if (!ns)
		return gateway_api_fields__oom(c);
	err = gateway_api_fields__opt_map(c, root, "metadata", "Namespace",
					  &md);
	if (!err && !md)
		err = gateway_api_fields__bad(
			c, root, "Namespace: metadata is required");
	if (!err)
		err = gateway_api_fields__req_str(c, md, "name", "metadata",
						  &ns->name);
	if (!err)
		err = labels_of(c, doc__get(md, "labels"), "metadata.labels",
				&ns->labels, &ns->nlabels);
	if (err)
		return err;
	/*
	 * The API server labels every namespace with its name (1.22+);
	 * selectors use it to pick namespaces by name. A manifest may omit it.
	 */
	if (!label(ns->labels, ns->nlabels, "kubernetes.io/metadata.name")) {
		ns->labels[ns->nlabels].key = "kubernetes.io/metadata.name";
		ns->labels[ns->nlabels++].value = ns->name;
	}
	if (gateway_api__namespace(c->m, ns->name)) {
		gateway_api_fields__bad(
			c, root, "Namespace %s is defined twice", ns->name);
		return -EEXIST;
	}
	grown = realloc(c->m->namespaces,
			(c->m->nnamespaces + 1) * sizeof(*grown));
	if (!grown)
		return gateway_api_fields__oom(c);
	c->m->namespaces = grown;
	grown[c->m->nnamespaces++] = ns;
	return 0;
}

const struct gw_namespace *gateway_api__namespace(const struct gw_model *m,
						  const char *name)
{
	for (size_t i = 0; i < m->nnamespaces; i++)
		if (!strcmp(m->namespaces[i]->name, name))
			return m->namespaces[i];
	return NULL;
}

static int expr_of(struct gw_ctx *c, const struct doc_node *e,
		   struct gw_sel_expr *x)
{
	const struct doc_node *vals;
	const char *op;
	int err;

	err = gateway_api_fields__req_str(c, e, "key", "matchExpressions",
					  &x->key);
	if (!err)
		err = gateway_api_fields__req_str(c, e, "operator",
						  "matchExpressions", &op);
	if (!err)
		err = gateway_api_fields__opt_list(c, e, "values",
						   "matchExpressions", &vals);
	if (!err)
		err = gateway_api_fields__max_items(c, vals, NS_MAX_VALUES,
						    "matchExpressions.values");
	if (err)
		return err;
	if (!strcmp(op, "In"))
		x->op = GW_SEL_IN;
	else if (!strcmp(op, "NotIn"))
		x->op = GW_SEL_NOT_IN;
	else if (!strcmp(op, "Exists"))
		x->op = GW_SEL_EXISTS;
	else if (!strcmp(op, "DoesNotExist"))
		x->op = GW_SEL_DOES_NOT_EXIST;
	else
		return gateway_api_fields__bad(
			c, e,
			"operator \"%s\": use In, NotIn, Exists or DoesNotExist",
			op);
	x->nvalues = vals ? vals->list.n : 0;
	/* metav1 validation: In/NotIn need values, Exists/DoesNotExist none */
	if ((x->op == GW_SEL_IN || x->op == GW_SEL_NOT_IN) != (x->nvalues > 0))
		return gateway_api_fields__bad(
			c, e, "operator %s %s values", op,
			x->nvalues ? "takes no" : "needs");
	x->values = gateway_api_fields__array(c->m, x->nvalues + 1,
					      sizeof(*x->values));
	if (!x->values)
		return gateway_api_fields__oom(c);
	for (size_t i = 0; i < x->nvalues; i++) {
		const struct doc_node *v = vals->list.items[i];

		if (v->kind != DOC_STRING)
			return gateway_api_fields__bad(
				c, v,
				"matchExpressions.values are strings (quote it)");
		x->values[i] = gateway_api_fields__strdup(c->m, v->str.s);
		if (!x->values[i])
			return gateway_api_fields__oom(c);
	}
	return 0;
}

int gateway_ns__selector(struct gw_ctx *c, const struct doc_node *nss,
			 struct gw_selector **out)
{
	const struct doc_node *ml, *me, *n = doc__get(nss, "selector");
	struct gw_selector *s;
	int err;

	*out = NULL;
	if (!n || n->kind == DOC_NULL)
		return gateway_api_fields__bad(
			c, nss,
			"namespaces.from Selector needs namespaces.selector");
	if (n->kind != DOC_MAP)
		return gateway_api_fields__bad(
			c, n, "namespaces.selector must be a mapping");
	s = gateway_api_fields__alloc(c->m, sizeof(*s));
	if (!s)
		return gateway_api_fields__oom(c);
	ml = doc__get(n, "matchLabels");
	err = labels_of(c, ml, "selector.matchLabels", &s->labels, &s->nlabels);
	if (!err)
		err = gateway_api_fields__opt_list(c, n, "matchExpressions",
						   "selector", &me);
	if (!err)
		err = gateway_api_fields__max_items(
			c, me, NS_MAX_LABELS, "selector.matchExpressions");
	if (err)
		return err;
	if (me && me->list.n) {
		s->exprs = gateway_api_fields__array(c->m, me->list.n,
						     sizeof(*s->exprs));
		if (!s->exprs)
			return gateway_api_fields__oom(c);
		for (size_t i = 0; i < me->list.n; i++) {
			err = gateway_api_fields__item_map(
				c, me->list.items[i], "matchExpressions", i);
			if (!err)
				err = expr_of(c, me->list.items[i],
					      &s->exprs[i]);
			if (err)
				return err;
		}
		s->nexprs = me->list.n;
	}
	*out = s;
	return 0;
}

bool gateway_api__selects(const struct gw_selector *s,
			  const struct gw_namespace *ns)
{
	for (size_t i = 0; i < s->nlabels; i++) {
		const char *v =
			label(ns->labels, ns->nlabels, s->labels[i].key);

		if (!v || strcmp(v, s->labels[i].value))
			return false;
	}
	for (size_t i = 0; i < s->nexprs; i++) {
		const struct gw_sel_expr *x = &s->exprs[i];
		const char *v = label(ns->labels, ns->nlabels, x->key);
		bool in = false;

		for (size_t j = 0; v && j < x->nvalues; j++)
			in |= !strcmp(v, x->values[j]);
		switch (x->op) {
		case GW_SEL_IN:
			if (!in)
				return false;
			break;
		case GW_SEL_NOT_IN: /* a missing label is "not in" */
			if (in)
				return false;
			break;
		case GW_SEL_EXISTS:
			if (!v)
				return false;
			break;
		case GW_SEL_DOES_NOT_EXIST:
			if (v)
				return false;
			break;
		}
	}
	return true;
}
