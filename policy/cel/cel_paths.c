// SPDX-License-Identifier: Apache-2.0
/*
 * cel__paths(): the field selections an expression makes from its
 * variables, for checks against a schema (`milometer check`). Walks the
 * checked AST; evaluation never uses this.
 */
#include <string.h>

#include "policy/cel/cel_impl.h"

static const unsigned var_bits[] = {
	[VAR_VALUE] = CEL_VAR_VALUE,
	[VAR_ATTRIBUTES] = CEL_VAR_ATTRIBUTES,
	[VAR_RESOURCE] = CEL_VAR_RESOURCE,
	[VAR_ITEM] = CEL_VAR_ITEM,
};

static bool is_step(const struct cel_node *n)
{
	return n->kind == N_SELECT || n->kind == N_INDEX || n->kind == N_HAS;
}

/* The chain ending at n, rooted at a variable; false if it is not one. */
static bool chain(const struct cel_node *n, struct cel_path *p)
{
	const struct cel_node *at = n;
	size_t k = 0;

	memset(p, 0, sizeof(*p));
	while (is_step(at)) {
		at = at->a;
		k++;
	}
	if (at->kind != N_VAR ||
	    at->op >= sizeof(var_bits) / sizeof(var_bits[0]))
		return false;
	p->var = var_bits[at->op];
	p->n = k < CEL_PATH_MAX ? k : CEL_PATH_MAX;
	p->has = n->kind == N_HAS;
	p->col = n->col;
	/* fill from the end; steps past CEL_PATH_MAX (from the root) are kept */
	for (at = n; is_step(at); at = at->a) {
		struct cel_path_seg *s;

		k--;
		if (k >= CEL_PATH_MAX)
			continue;
		s = &p->seg[k];
		s->col = at->col;
		if (at->kind != N_INDEX) {
			s->s = at->lit.str.s;
			s->len = at->lit.str.len;
		} else if (at->b->kind == N_LIT &&
			   at->b->lit.type == CEL_STRING) {
			s->s = at->b->lit.str.s;
			s->len = at->b->lit.str.len;
			s->indexed = true;
		} else {
			s->any = true; /* a list index or a computed key */
			s->indexed = true;
		}
	}
	return true;
}

static void walk(const struct cel_node *n, bool extended, cel_path_fn fn,
		 void *ctx)
{
	struct cel_path p;

	if (!n)
		return;
	if (is_step(n)) {
		if (!extended && chain(n, &p))
			fn(ctx, &p);
		walk(n->a, true, fn, ctx);
		if (n->kind == N_INDEX)
			walk(n->b, false, fn, ctx);
		return;
	}
	walk(n->a, false, fn, ctx);
	walk(n->b, false, fn, ctx);
	walk(n->c, false, fn, ctx);
	for (uint32_t i = 0; i < n->nargs; i++)
		walk(n->args[i], false, fn, ctx);
}

void cel__paths(const struct cel_program *p, cel_path_fn fn, void *ctx)
{
	walk(p->root, false, fn, ctx);
}
