// SPDX-License-Identifier: Apache-2.0
/*
 * CEL checker: resolves identifiers and functions, and infers static types
 * where they are known (`value` is double, literals, attributes[...] is
 * string; resource and item are dyn). Operators whose operand types are
 * both known are type-checked by running the evaluator's own operator on
 * stand-in values, so compile-time and run-time overload rules cannot drift
 * apart: `value / 1000` is rejected here, as cel-go's checker would.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/cel/cel_impl.h"
#include "policy/source/spelling.h"

static const struct {
	const char *name;
	unsigned bit;
	int var;
	uint8_t stype;
} vars[] = {
	{ "value", CEL_VAR_VALUE, VAR_VALUE, CEL_DOUBLE },
	{ "attributes", CEL_VAR_ATTRIBUTES, VAR_ATTRIBUTES, CEL_MAP },
	{ "resource", CEL_VAR_RESOURCE, VAR_RESOURCE, CEL_DYN },
	{ "item", CEL_VAR_ITEM, VAR_ITEM, CEL_DYN },
};

/* Identifiers that denote types, so that type(x) == int works. */
static const char *const type_idents[] = {
	"int",   "uint", "double", "bool",      "string",
	"bytes", "list", "map",    "null_type", "type",
};

static int check_fail(struct cel_error *err, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int check_fail(struct cel_error *err, int col, const char *fmt, ...)
{
	va_list ap;

	err->col = col;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static bool name_is(const struct cel_value *s, const char *name)
{
	return strlen(name) == s->str.len &&
	       !memcmp(name, s->str.s, s->str.len);
}

static void var_list(unsigned allowed, char *buf, size_t len)
{
	size_t i, off = 0;

	buf[0] = 0;
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++)
		if (allowed & vars[i].bit)
			off += snprintf(buf + off, len - off, "%s%s",
					off ? ", " : "", vars[i].name);
	if (!off)
		snprintf(buf, len, "none");
}

/* Out of line, like check_call(): cel_impl__check() recurses and should stay small. */
static __attribute__((noinline)) int
check_var(struct cel_program *p, struct cel_node *n, struct cel_error *err)
{
	const struct cel_value *s = &n->lit;
	const char *best = NULL;
	int best_d = 3, d;
	char list[64];
	size_t i;

	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (!name_is(s, vars[i].name))
			continue;
		if (!(p->allowed & vars[i].bit)) {
			var_list(p->allowed, list, sizeof(list));
			return check_fail(
				err, n->col,
				"'%s' is not available in this expression (available: %s)",
				vars[i].name, list);
		}
		n->op = vars[i].var;
		n->stype = vars[i].stype;
		return 0;
	}
	for (i = 0; i < sizeof(type_idents) / sizeof(type_idents[0]); i++) {
		if (name_is(s, type_idents[i])) {
			n->kind = N_LIT;
			n->lit.type = CEL_TYPE;
			n->lit.str.s = type_idents[i];
			n->lit.str.len = strlen(type_idents[i]);
			n->stype = CEL_TYPE;
			return 0;
		}
	}
	for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		if (!(p->allowed & vars[i].bit))
			continue;
		d = spelling__distance(s->str.s, s->str.len, vars[i].name,
				       strlen(vars[i].name));
		if (d < best_d) {
			best_d = d;
			best = vars[i].name;
		}
	}
	if (best)
		return check_fail(
			err, n->col,
			"undeclared reference to '%.*s' (did you mean '%s'?)",
			(int)(s->str.len > 64 ? 64 : s->str.len), s->str.s,
			best);
	var_list(p->allowed, list, sizeof(list));
	return check_fail(err, n->col,
			  "undeclared reference to '%.*s' (available: %s)",
			  (int)(s->str.len > 64 ? 64 : s->str.len), s->str.s,
			  list);
}

static const struct cel_list empty_list;
static const struct cel_map empty_map;

/* A value of static type t for probing operators; false if t is dyn. */
static bool stand_in(uint8_t t, struct cel_value *v)
{
	memset(v, 0, sizeof(*v));
	v->type = t;
	switch (t) {
	case CEL_NULL:
	case CEL_TIMESTAMP:
	case CEL_DURATION:
		return true;
	case CEL_BOOL:
		v->b = true;
		return true;
	case CEL_INT:
		v->i = 1;
		return true;
	case CEL_UINT:
		v->u = 1;
		return true;
	case CEL_DOUBLE:
		v->d = 1;
		return true;
	case CEL_STRING:
	case CEL_BYTES:
		v->str.s = "";
		return true;
	case CEL_TYPE:
		v->str.s = "int";
		v->str.len = 3;
		return true;
	case CEL_LIST:
		v->agg = CEL_AGG_LIST;
		v->opaque = &empty_list;
		return true;
	case CEL_MAP:
		v->agg = CEL_AGG_MAP;
		v->opaque = &empty_map;
		return true;
	default:
		return false;
	}
}

/*
 * Runs the operator on stand-ins. Only "no matching overload" is a compile
 * error; other errors depend on values, so the result type stays dyn.
 */
static __attribute__((noinline)) int
probe(struct cel_program *p, struct cel_node *n, struct cel_error *err)
{
	struct cel_value a, b, out;
	struct cel_error perr = { 0 };
	struct cel_value vscratch[2];
	char scratch[8];
	int r;

	if (!stand_in(n->a->stype, &a) ||
	    (n->kind == N_BINOP && !stand_in(n->b->stype, &b)))
		return 0;
	/* the real arena does not exist yet; stand-ins need a byte or two */
	p->err = &perr;
	p->arena = scratch;
	p->arena_len = sizeof(scratch);
	p->arena_used = 0;
	p->vpool = vscratch;
	p->vpool_len = 2;
	p->vpool_used = 0;
	if (n->kind == N_BINOP)
		r = cel_impl__binop(p, n->op, n->col, &a, &b, &out);
	else
		r = cel_impl__neg(p, n->col, &a, &out);
	p->err = NULL;
	p->arena = NULL;
	p->arena_len = 0;
	p->vpool = NULL;
	p->vpool_len = 0;
	if (r == CEL_E_OVERLOAD)
		return check_fail(err, n->col, "%s", perr.msg);
	if (!r)
		n->stype = out.type;
	return 0;
}

static int need_bool(struct cel_node *n, const char *op, struct cel_node *arg,
		     struct cel_error *err)
{
	if (arg->stype == CEL_DYN || arg->stype == CEL_BOOL)
		return 0;
	return check_fail(err, n->col,
			  "no matching overload for '%s' applied to '(%s)'", op,
			  cel_impl__type_name(arg->stype));
}

static __attribute__((noinline)) int
check_call(struct cel_program *p, struct cel_node *n, struct cel_error *err)
{
	const struct cel_value *s = &n->lit;
	const struct cel_func *f;
	bool member = n->op;
	int nargs = n->nargs;
	uint32_t i;

	f = cel_impl__func_lookup(s->str.s, s->str.len);
	if (!f)
		return check_fail(err, n->col, "undeclared function '%.*s'",
				  (int)(s->str.len > 64 ? 64 : s->str.len),
				  s->str.s);
	if (member && !f->member)
		return check_fail(err, n->col,
				  "'%s' is not a method; call it as %s(x)",
				  f->name, f->name);
	if (!member && !f->global)
		return check_fail(err, n->col,
				  "'%s' is a method; call it as x.%s(...)",
				  f->name, f->name);
	if (nargs < f->min_args || nargs > f->max_args) {
		int lo = f->min_args - member, hi = f->max_args - member;

		if (lo == hi)
			return check_fail(err, n->col,
					  "'%s' takes %d argument%s, got %d",
					  f->name, lo, lo == 1 ? "" : "s",
					  nargs - member);
		return check_fail(err, n->col,
				  "'%s' takes %d to %d arguments, got %d",
				  f->name, lo, hi, nargs - member);
	}
	for (i = 0; i < n->nargs && i < 3; i++) {
		uint8_t t = n->args[i]->stype;

		if (t != CEL_DYN && !(f->mask[i] & TM(t)))
			return check_fail(
				err, n->args[i]->col,
				"no matching overload for '%s' with argument %u of type %s",
				f->name, i + 1, cel_impl__type_name(t));
	}
	n->fn = f;
	n->stype = f->ret;
	return 0;
}

int cel_impl__check(struct cel_program *p, struct cel_node *n,
		    struct cel_error *err)
{
	uint32_t i;
	int r;

	if (n->a && (r = cel_impl__check(p, n->a, err)))
		return r;
	if (n->b && (r = cel_impl__check(p, n->b, err)))
		return r;
	if (n->c && (r = cel_impl__check(p, n->c, err)))
		return r;
	for (i = 0; i < n->nargs; i++)
		if ((r = cel_impl__check(p, n->args[i], err)))
			return r;

	switch (n->kind) {
	case N_LIT:
		n->stype = n->lit.type;
		return 0;
	case N_VAR:
		return check_var(p, n, err);
	case N_SELECT:
	case N_INDEX:
	case N_HAS:
		if (n->a->kind == N_VAR && n->a->op == VAR_ATTRIBUTES) {
			n->stype = n->kind == N_HAS ? CEL_BOOL : CEL_STRING;
			return 0;
		}
		n->stype = n->kind == N_HAS ? CEL_BOOL : CEL_DYN;
		if (n->a->stype == CEL_DYN || n->a->stype == CEL_MAP ||
		    (n->kind == N_INDEX && n->a->stype == CEL_LIST))
			return 0;
		if (n->kind == N_INDEX)
			return check_fail(
				err, n->col,
				"no matching overload for '_[_]' applied to '(%s, ...)'",
				cel_impl__type_name(n->a->stype));
		return check_fail(err, n->col,
				  "type '%s' does not support field selection",
				  cel_impl__type_name(n->a->stype));
	case N_CALL:
		return check_call(p, n, err);
	case N_LIST:
		n->stype = CEL_LIST;
		return 0;
	case N_MAP:
		n->stype = CEL_MAP;
		for (i = 0; i < n->nargs; i += 2) {
			uint8_t t = n->args[i]->stype;

			if (t != CEL_DYN && t != CEL_INT && t != CEL_UINT &&
			    t != CEL_BOOL && t != CEL_STRING)
				return check_fail(
					err, n->args[i]->col,
					"unsupported map key type %s (use int, uint, bool or string)",
					cel_impl__type_name(t));
		}
		return 0;
	case N_COND:
		if (n->a->stype != CEL_DYN && n->a->stype != CEL_BOOL)
			return check_fail(
				err, n->col,
				"the condition of '?:' must be bool, not %s",
				cel_impl__type_name(n->a->stype));
		n->stype = n->b->stype == n->c->stype ? n->b->stype : CEL_DYN;
		return 0;
	case N_AND:
	case N_OR:
		n->stype = CEL_BOOL;
		if ((r = need_bool(n, n->kind == N_AND ? "_&&_" : "_||_", n->a,
				   err)))
			return r;
		return need_bool(n, n->kind == N_AND ? "_&&_" : "_||_", n->b,
				 err);
	case N_NOT:
		n->stype = CEL_BOOL;
		return need_bool(n, "!_", n->a, err);
	case N_NEG:
	case N_BINOP:
		return probe(p, n, err);
	}
	return 0;
}
