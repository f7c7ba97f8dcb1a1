// SPDX-License-Identifier: Apache-2.0
/*
 * cel__affine(): recognises transforms of the form a * value + b so that a
 * histogram can rescale its bounds once instead of evaluating per
 * observation. Only checked-double subtrees qualify: `value / 1000` does not
 * type-check in CEL (double / int), so it never gets here.
 */
#include "policy/cel/cel_impl.h"

static bool affine(const struct cel_node *n, double *a, double *b)
{
	double a1, b1, a2, b2;

	if (n->stype != CEL_DOUBLE)
		return false;
	switch (n->kind) {
	case N_LIT:
		*a = 0;
		*b = n->lit.d;
		return true;
	case N_VAR:
		if (n->op != VAR_VALUE)
			return false;
		*a = 1;
		*b = 0;
		return true;
	case N_NEG:
		if (!affine(n->a, &a1, &b1))
			return false;
		*a = -a1;
		*b = -b1;
		return true;
	case N_CALL:
		/* double(x) of a double is the identity */
		if (n->nargs != 1 || n->fn->ret != CEL_DOUBLE ||
		    n->args[0]->stype != CEL_DOUBLE)
			return false;
		return affine(n->args[0], a, b);
	case N_BINOP:
		if (!affine(n->a, &a1, &b1) || !affine(n->b, &a2, &b2))
			return false;
		switch (n->op) {
		case OP_ADD:
			*a = a1 + a2;
			*b = b1 + b2;
			return true;
		case OP_SUB:
			*a = a1 - a2;
			*b = b1 - b2;
			return true;
		case OP_MUL:
			if (a1 != 0 && a2 != 0)
				return false; /* value * value */
			*a = a1 * b2 + a2 * b1;
			*b = b1 * b2;
			return true;
		case OP_DIV:
			if (a2 != 0 || b2 == 0)
				return false;
			*a = a1 / b2;
			*b = b1 / b2;
			return true;
		}
		return false;
	default:
		return false;
	}
}

bool cel__affine(const struct cel_program *p, double *a, double *b)
{
	double ra, rb;

	if (!p || !p->root || !affine(p->root, &ra, &rb))
		return false;
	*a = ra;
	*b = rb;
	return true;
}
