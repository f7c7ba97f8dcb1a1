// SPDX-License-Identifier: Apache-2.0
/*
 * CEL evaluator: walks the AST (height <= CEL_MAX_HEIGHT) and applies the
 * operator semantics of cel-spec langdef: no implicit numeric conversion in
 * arithmetic, errors on integer overflow and on division or modulus by zero
 * (IEEE results for double), commutative error absorption for && and ||.
 *
 * Nothing here calls malloc: results point into the bound data, the
 * literals, or the program's arena, which cel__eval() resets.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/cel/cel_impl.h"
#include "policy/source/doc.h"

int cel_impl__fail(struct cel_program *p, int col, const char *fmt, ...)
{
	va_list ap;

	if (p->err) {
		p->err->col = col;
		va_start(ap, fmt);
		vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

const char *cel_impl__op_name(int op)
{
	static const char *const names[] = {
		[OP_ADD] = "_+_", [OP_SUB] = "_-_", [OP_MUL] = "_*_",
		[OP_DIV] = "_/_", [OP_MOD] = "_%_", [OP_EQ] = "_==_",
		[OP_NE] = "_!=_", [OP_LT] = "_<_",  [OP_LE] = "_<=_",
		[OP_GT] = "_>_",  [OP_GE] = "_>=_", [OP_IN] = "@in",
	};

	return names[op];
}

int cel_impl__no_overload(struct cel_program *p, int col, const char *op,
			  const struct cel_value *a, const struct cel_value *b)
{
	if (b)
		cel_impl__fail(
			p, col,
			"no matching overload for '%s' applied to '(%s, %s)'",
			op, cel_impl__type_name(a->type),
			cel_impl__type_name(b->type));
	else
		cel_impl__fail(
			p, col,
			"no matching overload for '%s' applied to '(%s)'", op,
			cel_impl__type_name(a->type));
	return CEL_E_OVERLOAD;
}

char *cel_impl__arena_alloc(struct cel_program *p, size_t len)
{
	static char empty[1];
	char *s;

	if (!len)
		return empty;
	if (len > p->arena_len - p->arena_used)
		return NULL;
	s = p->arena + p->arena_used;
	p->arena_used += len;
	return s;
}

static struct cel_value *vpool_alloc(struct cel_program *p, size_t n)
{
	static struct cel_value empty[1];
	struct cel_value *v;

	if (!n)
		return empty;
	if (n > p->vpool_len - p->vpool_used)
		return NULL;
	v = p->vpool + p->vpool_used;
	p->vpool_used += n;
	return v;
}

static int too_large(struct cel_program *p, int col)
{
	return cel_impl__fail(
		p, col,
		"expression result too large (scratch space of %zu bytes exhausted)",
		p->arena_len);
}

static int arith_int(struct cel_program *p, int op, int col, int64_t a,
		     int64_t b, struct cel_value *out)
{
	int64_t r = 0;
	bool ovf = false;

	switch (op) {
	case OP_ADD:
		ovf = __builtin_add_overflow(a, b, &r);
		break;
	case OP_SUB:
		ovf = __builtin_sub_overflow(a, b, &r);
		break;
	case OP_MUL:
		ovf = __builtin_mul_overflow(a, b, &r);
		break;
	case OP_DIV:
	case OP_MOD:
		if (!b)
			return cel_impl__fail(p, col,
					      op == OP_DIV ? "division by zero"
							   : "modulus by zero");
		ovf = a == INT64_MIN && b == -1;
		if (!ovf)
			r = op == OP_DIV ? a / b : a % b;
		break;
	}
	if (ovf)
		return cel_impl__fail(p, col, "integer overflow in '%s'",
				      cel_impl__op_name(op));
	out->type = CEL_INT;
	out->i = r;
	return 0;
}

static int arith_uint(struct cel_program *p, int op, int col, uint64_t a,
		      uint64_t b, struct cel_value *out)
{
	uint64_t r = 0;
	bool ovf = false;

	switch (op) {
	case OP_ADD:
		ovf = __builtin_add_overflow(a, b, &r);
		break;
	case OP_SUB:
		ovf = __builtin_sub_overflow(a, b, &r);
		break;
	case OP_MUL:
		ovf = __builtin_mul_overflow(a, b, &r);
		break;
	case OP_DIV:
	case OP_MOD:
		if (!b)
			return cel_impl__fail(p, col,
					      op == OP_DIV ? "division by zero"
							   : "modulus by zero");
		r = op == OP_DIV ? a / b : a % b;
		break;
	}
	if (ovf)
		return cel_impl__fail(p, col,
				      "unsigned integer overflow in '%s'",
				      cel_impl__op_name(op));
	out->type = CEL_UINT;
	out->u = r;
	return 0;
}

/* Timestamps are int64 nanoseconds: 1677-09-21 to 2262-04-11. */
static int arith_time(struct cel_program *p, int op, int col,
		      const struct cel_value *l, const struct cel_value *r,
		      struct cel_value *out)
{
	int t = l->type == CEL_TIMESTAMP || r->type == CEL_TIMESTAMP
			? CEL_TIMESTAMP
			: CEL_DURATION;
	bool ovf;

	if (op == OP_SUB && l->type == CEL_TIMESTAMP &&
	    r->type == CEL_TIMESTAMP)
		t = CEL_DURATION;
	else if (op == OP_SUB && r->type == CEL_TIMESTAMP)
		return cel_impl__no_overload(p, col, cel_impl__op_name(op), l,
					     r);
	if (op == OP_ADD && l->type == CEL_TIMESTAMP &&
	    r->type == CEL_TIMESTAMP)
		return cel_impl__no_overload(p, col, cel_impl__op_name(op), l,
					     r);
	if (op == OP_ADD)
		ovf = __builtin_add_overflow(l->i, r->i, &out->i);
	else
		ovf = __builtin_sub_overflow(l->i, r->i, &out->i);
	if (ovf)
		return cel_impl__fail(p, col, "%s out of range in '%s'",
				      t == CEL_TIMESTAMP ? "timestamp"
							 : "duration",
				      cel_impl__op_name(op));
	out->type = t;
	return 0;
}

static int concat(struct cel_program *p, int col, const struct cel_value *l,
		  const struct cel_value *r, struct cel_value *out)
{
	size_t nl, nr, i;
	struct cel_value *v;
	struct cel_list *lst;
	char *s;

	if (l->type != CEL_LIST) {
		/* NUL-terminated too, for the C string functions */
		s = cel_impl__arena_alloc(p, l->str.len + r->str.len + 1);
		if (!s)
			return too_large(p, col);
		if (l->str.len)
			memcpy(s, l->str.s, l->str.len);
		if (r->str.len)
			memcpy(s + l->str.len, r->str.s, r->str.len);
		s[l->str.len + r->str.len] = 0;
		out->type = l->type;
		out->str.s = s;
		out->str.len = l->str.len + r->str.len;
		return 0;
	}
	nl = cel_impl__agg_size(l);
	nr = cel_impl__agg_size(r);
	/* the list header rides in the first slot of its own element block */
	_Static_assert(sizeof(*lst) <= sizeof(*v), "cel_list fits a slot");
	v = vpool_alloc(p, nl + nr + 1);
	if (!v)
		return too_large(p, col);
	lst = (struct cel_list *)v++;
	for (i = 0; i < nl; i++)
		cel_impl__agg_at(l, i, NULL, &v[i]);
	for (i = 0; i < nr; i++)
		cel_impl__agg_at(r, i, NULL, &v[nl + i]);
	lst->n = nl + nr;
	lst->v = v;
	out->type = CEL_LIST;
	out->agg = CEL_AGG_LIST;
	out->opaque = lst;
	return 0;
}

static int arith(struct cel_program *p, int op, int col,
		 const struct cel_value *l, const struct cel_value *r,
		 struct cel_value *out)
{
	bool lt = l->type == CEL_TIMESTAMP || l->type == CEL_DURATION;
	bool rt = r->type == CEL_TIMESTAMP || r->type == CEL_DURATION;

	if (lt && rt && (op == OP_ADD || op == OP_SUB))
		return arith_time(p, op, col, l, r, out);
	if (l->type != r->type)
		return cel_impl__no_overload(p, col, cel_impl__op_name(op), l,
					     r);
	switch (l->type) {
	case CEL_INT:
		return arith_int(p, op, col, l->i, r->i, out);
	case CEL_UINT:
		return arith_uint(p, op, col, l->u, r->u, out);
	case CEL_DOUBLE:
		out->type = CEL_DOUBLE;
		switch (op) {
		case OP_ADD:
			out->d = l->d + r->d;
			return 0;
		case OP_SUB:
			out->d = l->d - r->d;
			return 0;
		case OP_MUL:
			out->d = l->d * r->d;
			return 0;
		case OP_DIV:
			out->d = l->d / r->d;
			return 0;
		}
		break;
	case CEL_STRING:
	case CEL_BYTES:
	case CEL_LIST:
		if (op == OP_ADD)
			return concat(p, col, l, r, out);
		break;
	default:
		break;
	}
	return cel_impl__no_overload(p, col, cel_impl__op_name(op), l, r);
}

static int contains(struct cel_program *p, int col, const struct cel_value *x,
		    const struct cel_value *c, struct cel_value *out)
{
	struct cel_value e;
	size_t i, n;

	out->type = CEL_BOOL;
	out->b = false;
	if (c->type == CEL_MAP) {
		out->b = cel_impl__map_find(c, x, &e) > 0;
		return 0;
	}
	if (c->type != CEL_LIST)
		return cel_impl__no_overload(p, col, "@in", x, c);
	n = cel_impl__agg_size(c);
	for (i = 0; i < n && !out->b; i++) {
		cel_impl__agg_at(c, i, NULL, &e);
		out->b = cel_impl__equal(x, &e);
	}
	return 0;
}

int cel_impl__binop(struct cel_program *p, int op, int col,
		    const struct cel_value *l, const struct cel_value *r,
		    struct cel_value *out)
{
	int cmp, ret;

	switch (op) {
	case OP_EQ:
	case OP_NE:
		out->type = CEL_BOOL;
		out->b = cel_impl__equal(l, r) == (op == OP_EQ);
		return 0;
	case OP_LT:
	case OP_LE:
	case OP_GT:
	case OP_GE:
		ret = cel_impl__compare(l, r, &cmp);
		if (ret)
			return cel_impl__no_overload(
				p, col, cel_impl__op_name(op), l, r);
		out->type = CEL_BOOL;
		/* cmp == 2: a NaN was involved, every ordering is false */
		out->b = cmp != 2 && (op == OP_LT   ? cmp < 0
				      : op == OP_LE ? cmp <= 0
				      : op == OP_GT ? cmp > 0
						    : cmp >= 0);
		return 0;
	case OP_IN:
		return contains(p, col, l, r, out);
	default:
		return arith(p, op, col, l, r, out);
	}
}

int cel_impl__neg(struct cel_program *p, int col, const struct cel_value *v,
		  struct cel_value *out)
{
	if (v->type == CEL_INT) {
		if (v->i == INT64_MIN)
			return cel_impl__fail(p, col,
					      "integer overflow in '-_'");
		out->type = CEL_INT;
		out->i = -v->i;
		return 0;
	}
	if (v->type == CEL_DOUBLE) {
		out->type = CEL_DOUBLE;
		out->d = -v->d;
		return 0;
	}
	return cel_impl__no_overload(p, col, "-_", v, NULL);
}

static int no_such_key(struct cel_program *p, int col,
		       const struct cel_value *key)
{
	char buf[128];

	if (key->type == CEL_STRING)
		return cel_impl__fail(p, col, "no such key: %.*s",
				      (int)(key->str.len > 100 ? 100
							       : key->str.len),
				      key->str.s);
	if (cel_impl__fmt_value(key, buf, sizeof(buf)) < 0)
		snprintf(buf, sizeof(buf), "(%s)",
			 cel_impl__type_name(key->type));
	return cel_impl__fail(p, col, "no such key: %s", buf);
}

static int select_field(struct cel_program *p, const struct cel_node *n,
			const struct cel_value *m, struct cel_value *out)
{
	if (m->type != CEL_MAP)
		return cel_impl__fail(
			p, n->col,
			"type '%s' does not support field selection (selecting '%.*s')",
			cel_impl__type_name(m->type), (int)n->lit.str.len,
			n->lit.str.s);
	if (cel_impl__map_find(m, &n->lit, out) > 0)
		return 0;
	return no_such_key(p, n->col, &n->lit);
}

static int index_list(struct cel_program *p, int col, const struct cel_value *l,
		      const struct cel_value *k, struct cel_value *out)
{
	size_t n = cel_impl__agg_size(l);
	int64_t i;

	if (k->type == CEL_INT)
		i = k->i;
	else if (k->type == CEL_UINT)
		i = k->u > INT64_MAX ? -1 : (int64_t)k->u;
	else if (k->type == CEL_DOUBLE && cel_impl__double_fits_int(k->d) &&
		 k->d == (double)(int64_t)k->d)
		i = (int64_t)k->d;
	else
		return cel_impl__no_overload(p, col, "_[_]", l, k);
	if (i < 0 || (uint64_t)i >= n)
		return cel_impl__fail(
			p, col, "index out of range: %lld (list size %zu)",
			(long long)i, n);
	cel_impl__agg_at(l, i, NULL, out);
	return 0;
}

static int eval_index(struct cel_program *p, const struct cel_node *n,
		      struct cel_value *out)
{
	struct cel_value c, k;
	int r;

	if ((r = cel_impl__ev(p, n->a, &c)) || (r = cel_impl__ev(p, n->b, &k)))
		return r;
	if (c.type == CEL_LIST)
		return index_list(p, n->col, &c, &k, out);
	if (c.type != CEL_MAP)
		return cel_impl__no_overload(p, n->col, "_[_]", &c, &k);
	if (cel_impl__map_find(&c, &k, out) > 0)
		return 0;
	return no_such_key(p, n->col, &k);
}

static int eval_var(struct cel_program *p, const struct cel_node *n,
		    struct cel_value *out)
{
	const struct cel_activation *act = p->act;
	const struct doc_node *d;

	switch (n->op) {
	case VAR_VALUE:
		out->type = CEL_DOUBLE;
		out->d = act->value;
		return 0;
	case VAR_ATTRIBUTES:
		out->type = CEL_MAP;
		out->agg = CEL_AGG_ATTRS;
		out->opaque = &p->attrs;
		return 0;
	default:
		d = n->op == VAR_RESOURCE ? act->resource : act->item;
		if (!d)
			return cel_impl__fail(p, n->col, "'%s' is not bound",
					      n->op == VAR_RESOURCE ? "resource"
								    : "item");
		cel_impl__from_doc(d, out);
		return 0;
	}
}

static int eval_aggregate(struct cel_program *p, const struct cel_node *n,
			  struct cel_value *out)
{
	uint32_t i, j;
	int r;

	if (n->kind == N_LIST) {
		struct cel_list *l = n->slot;

		for (i = 0; i < n->nargs; i++)
			if ((r = cel_impl__ev(p, n->args[i], &l->v[i])))
				return r;
		out->type = CEL_LIST;
		out->agg = CEL_AGG_LIST;
		out->opaque = l;
		return 0;
	}
	struct cel_map *m = n->slot;

	for (i = 0; i < m->n; i++) {
		struct cel_value *k = &m->k[i];

		if ((r = cel_impl__ev(p, n->args[2 * i], k)) ||
		    (r = cel_impl__ev(p, n->args[2 * i + 1], &m->v[i])))
			return r;
		if (k->type != CEL_INT && k->type != CEL_UINT &&
		    k->type != CEL_BOOL && k->type != CEL_STRING)
			return cel_impl__fail(p, n->args[2 * i]->col,
					      "unsupported map key type %s",
					      cel_impl__type_name(k->type));
		for (j = 0; j < i; j++)
			if (cel_impl__equal(&m->k[j], k))
				return cel_impl__fail(p, n->args[2 * i]->col,
						      "repeated map key");
	}
	out->type = CEL_MAP;
	out->agg = CEL_AGG_MAP;
	out->opaque = m;
	return 0;
}

/*
 * && and ||: an error on one side is absorbed if the other side decides.
 * Not inlined: the saved error would otherwise enlarge every recursive
 * cel_impl__ev() frame.
 */
static __attribute__((noinline)) int eval_logic(struct cel_program *p,
						const struct cel_node *n,
						struct cel_value *out)
{
	bool decider = n->kind == N_OR; /* the value that short-circuits */
	const char *op = n->kind == N_OR ? "_||_" : "_&&_";
	struct cel_value a, b;
	struct cel_error saved;
	int ra, rb;

	ra = cel_impl__ev(p, n->a, &a);
	if (!ra && a.type != CEL_BOOL)
		ra = cel_impl__no_overload(p, n->col, op, &a, NULL);
	if (!ra && a.b == decider)
		goto decided;
	if (ra && p->err)
		saved = *p->err;
	rb = cel_impl__ev(p, n->b, &b);
	if (!rb && b.type != CEL_BOOL)
		rb = cel_impl__no_overload(p, n->col, op, &b, NULL);
	if (!rb && b.b == decider)
		goto decided;
	if (ra) {
		if (p->err)
			*p->err = saved;
		return ra;
	}
	if (rb)
		return rb;
	out->type = CEL_BOOL;
	out->b = !decider;
	return 0;
decided:
	out->type = CEL_BOOL;
	out->b = decider;
	return 0;
}

int cel_impl__ev(struct cel_program *p, const struct cel_node *n,
		 struct cel_value *out)
{
	struct cel_value a, b, args[3];
	uint32_t i;
	int r;

	switch (n->kind) {
	case N_LIT:
		*out = n->lit;
		return 0;
	case N_VAR:
		return eval_var(p, n, out);
	case N_SELECT:
		if ((r = cel_impl__ev(p, n->a, &a)))
			return r;
		return select_field(p, n, &a, out);
	case N_HAS:
		if ((r = cel_impl__ev(p, n->a, &a)))
			return r;
		if (a.type != CEL_MAP)
			return cel_impl__fail(p, n->col,
					      "has() needs a map, got %s",
					      cel_impl__type_name(a.type));
		out->type = CEL_BOOL;
		out->b = cel_impl__map_find(&a, &n->lit, &b) > 0;
		return 0;
	case N_INDEX:
		return eval_index(p, n, out);
	case N_CALL:
		for (i = 0; i < n->nargs; i++)
			if ((r = cel_impl__ev(p, n->args[i], &args[i])))
				return r;
		return n->fn->fn(p, n, args, out);
	case N_LIST:
	case N_MAP:
		return eval_aggregate(p, n, out);
	case N_COND:
		if ((r = cel_impl__ev(p, n->a, &a)))
			return r;
		if (a.type != CEL_BOOL)
			return cel_impl__no_overload(p, n->col, "_?_:_", &a,
						     NULL);
		return cel_impl__ev(p, a.b ? n->b : n->c, out);
	case N_AND:
	case N_OR:
		return eval_logic(p, n, out);
	case N_NOT:
		if ((r = cel_impl__ev(p, n->a, &a)))
			return r;
		if (a.type != CEL_BOOL)
			return cel_impl__no_overload(p, n->col, "!_", &a, NULL);
		out->type = CEL_BOOL;
		out->b = !a.b;
		return 0;
	case N_NEG:
		if ((r = cel_impl__ev(p, n->a, &a)))
			return r;
		return cel_impl__neg(p, n->col, &a, out);
	case N_BINOP:
		if ((r = cel_impl__ev(p, n->a, &a)) ||
		    (r = cel_impl__ev(p, n->b, &b)))
			return r;
		return cel_impl__binop(p, n->op, n->col, &a, &b, out);
	}
	return cel_impl__fail(p, n->col, "internal error: bad node");
}

int cel__eval(struct cel_program *p, const struct cel_activation *act,
	      struct cel_value *out, struct cel_error *err)
{
	static const struct cel_activation none;
	struct cel_error dummy;
	int r;

	if (!p || !out)
		return -EINVAL;

	p->err = err ? err : &dummy;
	p->err->col = 0;
	p->err->msg[0] = 0;
	p->act = act ? act : &none;
	p->attrs.a = p->act->attrs;
	p->attrs.n = p->act->attrs ? p->act->nattrs : 0;
	p->arena_used = 0;
	p->vpool_used = 0;
	memset(out, 0, sizeof(*out));
	r = cel_impl__ev(p, p->root, out);
	p->err = NULL;
	return r ? -EINVAL : 0;
}
