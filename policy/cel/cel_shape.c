// SPDX-License-Identifier: Apache-2.0
/*
 * Shape analysis for translators: which variables an expression reads, and
 * whether it is a plain field selection (attributes['k'], resource.a.b,
 * item.x, resource.spec.refs[0].name) that another system's path syntax can
 * express without evaluating CEL.
 */
#include <string.h>

#include "policy/cel/cel_impl.h"

static unsigned vars(const struct cel_node *n)
{
	unsigned m = 0;

	if (!n)
		return 0;
	if (n->kind == N_VAR)
		return 1u << n->op;
	m |= vars(n->a) | vars(n->b) | vars(n->c);
	for (uint32_t i = 0; i < n->nargs; i++)
		m |= vars(n->args[i]);
	return m;
}

unsigned cel__vars(const struct cel_program *p)
{
	unsigned m = p && p->root ? vars(p->root) : 0, out = 0;

	if (m & (1u << VAR_VALUE))
		out |= CEL_VAR_VALUE;
	if (m & (1u << VAR_ATTRIBUTES))
		out |= CEL_VAR_ATTRIBUTES;
	if (m & (1u << VAR_RESOURCE))
		out |= CEL_VAR_RESOURCE;
	if (m & (1u << VAR_ITEM))
		out |= CEL_VAR_ITEM;
	return out;
}

static int path(const struct cel_node *n, unsigned *var, struct cel_step *segs,
		size_t max)
{
	int k;

	switch (n->kind) {
	case N_VAR:
		*var = n->op == VAR_ATTRIBUTES ? CEL_VAR_ATTRIBUTES
		       : n->op == VAR_RESOURCE ? CEL_VAR_RESOURCE
		       : n->op == VAR_ITEM     ? CEL_VAR_ITEM
					       : CEL_VAR_VALUE;
		return 0;
	case N_SELECT:
		k = path(n->a, var, segs, max);
		if (k < 0 || (size_t)k >= max)
			return -1;
		segs[k] = (struct cel_step){ n->lit.str.s, n->lit.str.len,
					     false };
		return k + 1;
	case N_INDEX:
		if (n->b->kind != N_LIT)
			return -1;
		k = path(n->a, var, segs, max);
		if (k < 0 || (size_t)k >= max)
			return -1;
		if (n->b->lit.type == CEL_STRING)
			segs[k] = (struct cel_step){ n->b->lit.str.s,
						     n->b->lit.str.len, false };
		else if (n->b->lit.type == CEL_INT && n->b->lit.i >= 0)
			segs[k] = (struct cel_step){ NULL, (size_t)n->b->lit.i,
						     true };
		else
			return -1;
		return k + 1;
	case N_CALL:
		/* string(x): KSM and OTTL copy the value as text anyway */
		if (n->nargs == 1 && n->lit.str.len == 6 &&
		    !memcmp(n->lit.str.s, "string", 6))
			return path(n->args[0], var, segs, max);
		return -1;
	default:
		return -1;
	}
}

int cel__path(const struct cel_program *p, unsigned *var, struct cel_step *segs,
	      size_t max)
{
	unsigned v = 0;
	int k;

	if (!p || !p->root)
		return -1;
	k = path(p->root, &v, segs, max);
	if (k < 0 || v == CEL_VAR_VALUE)
		return -1;
	*var = v;
	return k;
}

bool cel__constant(const struct cel_program *p, struct cel_value *out)
{
	if (!p || !p->root || p->root->kind != N_LIT)
		return false;
	*out = p->root->lit;
	return true;
}

static bool is_num(const struct cel_node *n, double v)
{
	if (n->kind != N_LIT)
		return false;
	return (n->lit.type == CEL_INT && (double)n->lit.i == v) ||
	       (n->lit.type == CEL_DOUBLE && n->lit.d == v);
}

static bool call_named(const struct cel_node *n, const char *name)
{
	size_t l = strlen(name);

	return n->kind == N_CALL && n->nargs == 1 && n->lit.str.len == l &&
	       !memcmp(n->lit.str.s, name, l);
}

enum cel_shape cel__value_shape(const struct cel_program *p, unsigned *var,
				struct cel_step *segs, size_t max, int *nsegs)
{
	const struct cel_node *n = p && p->root ? p->root : NULL;

	if (!n)
		return CEL_SHAPE_OTHER;
	if (is_num(n, 1))
		return CEL_SHAPE_ONE;
	if (n->kind == N_COND && is_num(n->b, 1) && is_num(n->c, 0) &&
	    n->a->kind == N_BINOP && n->a->op == OP_EQ &&
	    n->a->b->kind == N_LIT && n->a->b->lit.type == CEL_STRING &&
	    n->a->b->lit.str.len == 4 &&
	    !memcmp(n->a->b->lit.str.s, "True", 4)) {
		*nsegs = path(n->a->a, var, segs, max);
		return *nsegs >= 0 ? CEL_SHAPE_TRUE_FLAG : CEL_SHAPE_OTHER;
	}
	/* x, double(x), int(timestamp(x)): a number, or an RFC 3339 time
	 * that KSM reads as Unix seconds */
	if (call_named(n, "int") && call_named(n->args[0], "timestamp"))
		n = n->args[0]->args[0]; /* int(): Unix seconds of the time */
	else if (call_named(n, "double"))
		n = n->args[0]; /* int(x) of a double truncates: not here */
	*nsegs = path(n, var, segs, max);
	return *nsegs >= 0 && *var != CEL_VAR_VALUE ? CEL_SHAPE_NUMBER
						    : CEL_SHAPE_OTHER;
}
