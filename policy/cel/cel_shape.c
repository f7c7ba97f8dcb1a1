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

static int path(const struct cel_node *n, unsigned *var,
		struct cel_path_seg *segs, size_t max)
{
	int k;

	switch (n->kind) {
	case N_VAR:
		*var = n->op == VAR_ATTRIBUTES ? CEL_VAR_ATTRIBUTES :
		       n->op == VAR_RESOURCE	? CEL_VAR_RESOURCE :
		       n->op == VAR_ITEM	? CEL_VAR_ITEM :
						  CEL_VAR_VALUE;
		return 0;
	case N_SELECT:
		k = path(n->a, var, segs, max);
		if (k < 0 || (size_t)k >= max)
			return -1;
		segs[k] = (struct cel_path_seg){ n->lit.str.s, n->lit.str.len,
						 false };
		return k + 1;
	case N_INDEX:
		if (n->b->kind != N_LIT)
			return -1;
		k = path(n->a, var, segs, max);
		if (k < 0 || (size_t)k >= max)
			return -1;
		if (n->b->lit.type == CEL_STRING)
			segs[k] = (struct cel_path_seg){ n->b->lit.str.s,
							 n->b->lit.str.len,
							 false };
		else if (n->b->lit.type == CEL_INT && n->b->lit.i >= 0)
			segs[k] = (struct cel_path_seg){ NULL,
							 (size_t)n->b->lit.i,
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

int cel__path(const struct cel_program *p, unsigned *var,
	      struct cel_path_seg *segs, size_t max)
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
