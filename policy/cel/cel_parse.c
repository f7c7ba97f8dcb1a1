// SPDX-License-Identifier: Apache-2.0
/*
 * CEL parser: recursive descent over the grammar in cel-spec langdef
 * "Syntax", producing an AST in the program's node pool. Recursion is
 * bounded twice: CEL_MAX_NEST for the parser's own stack (parentheses,
 * brackets, ternaries) and CEL_MAX_HEIGHT for the tree, which is what the
 * evaluator recurses over, so a hostile expression fails with a message
 * instead of overflowing the C stack.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/cel/cel_impl.h"

struct parser {
	struct cel_program *p;
	const struct cel_token *t;
	size_t pos, ntok;
	int nest;
	struct cel_error *err;
	bool failed;
};

static struct cel_node *parse_expr(struct parser *ps);

/*
 * Reserved for embedding CEL in other languages. Like cel-go, only a bare
 * name is refused: after '.' they are field names, and Kubernetes objects
 * have metadata.namespace.
 */
static const char *const reserved[] = {
	"as",        "break",  "const",  "continue", "else",  "for",
	"function",  "if",     "import", "let",      "loop",  "package",
	"namespace", "return", "var",    "void",     "while",
};

/* Comprehension macros, which need per-iteration scopes we do not have. */
static const char *const macros[] = {
	"all", "exists", "exists_one", "map", "filter",
};

static const char *find_word(const char *const *words, size_t n,
			     const struct cel_token *t)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strlen(words[i]) == t->len &&
		    !memcmp(words[i], t->s, t->len))
			return words[i];
	return NULL;
}

static const char *tok_name(const struct cel_token *t, char *buf, size_t len)
{
	static const char *const names[] = {
		[T_EOF] = "end of expression",
		[T_INT] = "number",
		[T_UINT] = "number",
		[T_DOUBLE] = "number",
		[T_STRING] = "string",
		[T_BYTES] = "bytes",
		[T_TRUE] = "'true'",
		[T_FALSE] = "'false'",
		[T_NULL] = "'null'",
		[T_IN] = "'in'",
		[T_LPAREN] = "'('",
		[T_RPAREN] = "')'",
		[T_LBRACKET] = "'['",
		[T_RBRACKET] = "']'",
		[T_LBRACE] = "'{'",
		[T_RBRACE] = "'}'",
		[T_DOT] = "'.'",
		[T_COMMA] = "','",
		[T_COLON] = "':'",
		[T_QUESTION] = "'?'",
		[T_PLUS] = "'+'",
		[T_MINUS] = "'-'",
		[T_STAR] = "'*'",
		[T_SLASH] = "'/'",
		[T_PERCENT] = "'%'",
		[T_NOT] = "'!'",
		[T_EQ] = "'=='",
		[T_NE] = "'!='",
		[T_LT] = "'<'",
		[T_LE] = "'<='",
		[T_GT] = "'>'",
		[T_GE] = "'>='",
		[T_AND] = "'&&'",
		[T_OR] = "'||'",
	};

	if (t->kind == T_IDENT) {
		snprintf(buf, len, "'%.*s'", (int)(t->len > 64 ? 64 : t->len),
			 t->s);
		return buf;
	}
	return names[t->kind];
}

static struct cel_node *fail(struct parser *ps, int col, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static struct cel_node *fail(struct parser *ps, int col, const char *fmt, ...)
{
	va_list ap;

	if (ps->failed)
		return NULL;
	ps->failed = true;
	ps->err->col = col;
	va_start(ap, fmt);
	vsnprintf(ps->err->msg, sizeof(ps->err->msg), fmt, ap);
	va_end(ap);
	return NULL;
}

static struct cel_node *unexpected(struct parser *ps)
{
	const struct cel_token *t = &ps->t[ps->pos];
	char buf[80];

	return fail(ps, t->col, "unexpected token %s",
		    tok_name(t, buf, sizeof(buf)));
}

static const struct cel_token *peek(struct parser *ps)
{
	return &ps->t[ps->pos];
}

static const struct cel_token *next(struct parser *ps)
{
	const struct cel_token *t = &ps->t[ps->pos];

	if (t->kind != T_EOF)
		ps->pos++;
	return t;
}

static bool accept(struct parser *ps, enum cel_tok k)
{
	if (peek(ps)->kind != k)
		return false;
	next(ps);
	return true;
}

static bool expect(struct parser *ps, enum cel_tok k, const char *what)
{
	const struct cel_token *t = peek(ps);
	char buf[80];

	if (accept(ps, k))
		return true;
	fail(ps, t->col, "expected %s but found %s", what,
	     tok_name(t, buf, sizeof(buf)));
	return false;
}

static struct cel_node *new_node(struct parser *ps, enum cel_nkind kind,
				 int col)
{
	struct cel_program *p = ps->p;
	struct cel_node *n;

	/* every node consumes at least one token, so the pool cannot run out */
	if (p->nnodes == p->cap)
		return fail(ps, col, "expression too complex");
	n = &p->nodes[p->nnodes++];
	memset(n, 0, sizeof(*n));
	n->kind = kind;
	n->col = col;
	n->stype = CEL_DYN;
	return n;
}

static void bump(int *h, const struct cel_node *c)
{
	if (c && c->height + 1 > *h)
		*h = c->height + 1;
}

/* Records the node's height; refuses trees the evaluator could not walk. */
static struct cel_node *finish(struct parser *ps, struct cel_node *n)
{
	int h = 1;
	uint32_t i;

	if (!n)
		return NULL;
	bump(&h, n->a);
	bump(&h, n->b);
	bump(&h, n->c);
	for (i = 0; i < n->nargs; i++)
		bump(&h, n->args[i]);
	n->height = h;
	if (h > CEL_MAX_HEIGHT)
		return fail(
			ps, n->col,
			"expression nests too deeply (more than %d levels); split it or use fewer chained operators",
			CEL_MAX_HEIGHT);
	return n;
}

static struct cel_node *binary(struct parser *ps, enum cel_nkind kind, int op,
			       int col, struct cel_node *l, struct cel_node *r)
{
	struct cel_node *n;

	if (!l || !r)
		return NULL;
	n = new_node(ps, kind, col);
	if (!n)
		return NULL;
	n->op = op;
	n->a = l;
	n->b = r;
	return finish(ps, n);
}

/* Moves a chain linked through ->next into the argument pool. */
static int set_args(struct parser *ps, struct cel_node *n,
		    struct cel_node *head, uint32_t cnt)
{
	struct cel_program *p = ps->p;
	uint32_t i;

	if (p->nargpool + cnt > p->argcap) {
		fail(ps, n->col, "expression too complex");
		return -E2BIG;
	}
	n->args = &p->argpool[p->nargpool];
	p->nargpool += cnt;
	for (i = 0; i < cnt; i++, head = head->next)
		n->args[i] = head;
	n->nargs = cnt;
	return 0;
}

/*
 * Parses "a, b, c" up to the closing token (a trailing comma is allowed in
 * list and map literals), as a chain; map entries come as key, value pairs.
 */
static int parse_list(struct parser *ps, enum cel_tok close, bool pairs,
		      bool trailing, struct cel_node **head, uint32_t *cnt)
{
	struct cel_node *tail = NULL, *e;

	*head = NULL;
	*cnt = 0;
	if (accept(ps, close))
		return 0;
	for (;;) {
		for (int k = 0; k < (pairs ? 2 : 1); k++) {
			e = parse_expr(ps);
			if (!e)
				return -EINVAL;
			e->next = NULL;
			if (tail)
				tail->next = e;
			else
				*head = e;
			tail = e;
			(*cnt)++;
			if (pairs && k == 0 && !expect(ps, T_COLON, "':'"))
				return -EINVAL;
		}
		if (accept(ps, close))
			return 0;
		if (!expect(ps, T_COMMA,
			    close == T_RPAREN     ? "',' or ')'"
			    : close == T_RBRACKET ? "',' or ']'"
						  : "',' or '}'"))
			return -EINVAL;
		if (trailing && accept(ps, close))
			return 0;
	}
}

static struct cel_node *call(struct parser *ps, const struct cel_token *name,
			     struct cel_node *recv)
{
	struct cel_node *n, *head;
	const char *m;
	uint32_t cnt;

	m = find_word(macros, sizeof(macros) / sizeof(macros[0]), name);
	if (m)
		return fail(
			ps, name->col,
			"the '%s' macro is not supported by milometer's CEL subset",
			m);
	n = new_node(ps, N_CALL, name->col);
	if (!n)
		return NULL;
	n->lit.type = CEL_STRING;
	n->lit.str.s = name->s;
	n->lit.str.len = name->len;
	if (parse_list(ps, T_RPAREN, false, false, &head, &cnt))
		return NULL;
	if (recv) {
		n->op = 1; /* receiver style */
		recv->next = head;
		head = recv;
		cnt++;
	}
	if (!recv && name->len == 3 && !memcmp(name->s, "has", 3)) {
		/* has(a.f) is a macro: it tests presence instead of reading */
		if (cnt != 1 || head->kind != N_SELECT)
			return fail(
				ps, name->col,
				"has() needs one field selection, e.g. has(resource.metadata.labels)");
		n->kind = N_HAS;
		n->a = head->a;
		n->lit = head->lit;
		return finish(ps, n);
	}
	if (set_args(ps, n, head, cnt))
		return NULL;
	return finish(ps, n);
}

static struct cel_node *literal(struct parser *ps, const struct cel_token *t,
				bool negate)
{
	struct cel_node *n = new_node(ps, N_LIT, t->col);

	if (!n)
		return NULL;
	switch (t->kind) {
	case T_INT:
		if (t->u > (uint64_t)INT64_MAX + (negate ? 1 : 0))
			return fail(ps, t->col, "integer literal out of range");
		n->lit.type = CEL_INT;
		n->lit.i = negate ? (int64_t)(0 - t->u) : (int64_t)t->u;
		break;
	case T_UINT:
		n->lit.type = CEL_UINT;
		n->lit.u = t->u;
		break;
	case T_DOUBLE:
		n->lit.type = CEL_DOUBLE;
		n->lit.d = negate ? -t->d : t->d;
		break;
	case T_STRING:
	case T_BYTES:
		n->lit.type = t->kind == T_STRING ? CEL_STRING : CEL_BYTES;
		n->lit.str.s = t->s;
		n->lit.str.len = t->len;
		break;
	case T_TRUE:
	case T_FALSE:
		n->lit.type = CEL_BOOL;
		n->lit.b = t->kind == T_TRUE;
		break;
	default:
		n->lit.type = CEL_NULL;
		break;
	}
	n->stype = n->lit.type;
	return finish(ps, n);
}

static struct cel_node *parse_primary(struct parser *ps)
{
	const struct cel_token *t = peek(ps);
	struct cel_node *n, *head;
	uint32_t cnt;

	switch (t->kind) {
	case T_INT:
	case T_UINT:
	case T_DOUBLE:
	case T_STRING:
	case T_BYTES:
	case T_TRUE:
	case T_FALSE:
	case T_NULL:
		next(ps);
		return literal(ps, t, false);
	case T_DOT:
		/* ".name" asks for the root scope; we only have one */
		next(ps);
		if (peek(ps)->kind != T_IDENT)
			return fail(ps, peek(ps)->col,
				    "expected a name after '.'");
		/* fallthrough */
	case T_IDENT:
		t = next(ps);
		if (find_word(reserved, sizeof(reserved) / sizeof(reserved[0]),
			      t))
			return fail(
				ps, t->col,
				"'%.*s' is a reserved word and cannot be used as a name",
				(int)t->len, t->s);
		if (accept(ps, T_LPAREN))
			return call(ps, t, NULL);
		n = new_node(ps, N_VAR, t->col);
		if (!n)
			return NULL;
		n->lit.type = CEL_STRING;
		n->lit.str.s = t->s;
		n->lit.str.len = t->len;
		return finish(ps, n);
	case T_LPAREN:
		next(ps);
		n = parse_expr(ps);
		if (!n || !expect(ps, T_RPAREN, "')'"))
			return NULL;
		return n;
	case T_LBRACKET:
	case T_LBRACE:
		next(ps);
		n = new_node(ps, t->kind == T_LBRACKET ? N_LIST : N_MAP,
			     t->col);
		if (!n)
			return NULL;
		n->stype = t->kind == T_LBRACKET ? CEL_LIST : CEL_MAP;
		if (parse_list(ps,
			       t->kind == T_LBRACKET ? T_RBRACKET : T_RBRACE,
			       t->kind == T_LBRACE, true, &head, &cnt) ||
		    set_args(ps, n, head, cnt))
			return NULL;
		return finish(ps, n);
	default:
		return unexpected(ps);
	}
}

static struct cel_node *parse_member(struct parser *ps)
{
	struct cel_node *e = parse_primary(ps), *n;
	const struct cel_token *t, *name;

	while (e) {
		t = peek(ps);
		if (t->kind == T_DOT) {
			next(ps);
			name = peek(ps);
			if (name->kind != T_IDENT)
				return fail(ps, name->col,
					    "expected a field name after '.'");
			next(ps);
			if (accept(ps, T_LPAREN)) {
				e = call(ps, name, e);
				continue;
			}
			n = new_node(ps, N_SELECT, name->col);
			if (!n)
				return NULL;
			n->a = e;
			n->lit.type = CEL_STRING;
			n->lit.str.s = name->s;
			n->lit.str.len = name->len;
			e = finish(ps, n);
		} else if (t->kind == T_LBRACKET) {
			next(ps);
			n = new_node(ps, N_INDEX, t->col);
			if (!n)
				return NULL;
			n->a = e;
			n->b = parse_expr(ps);
			if (!n->b || !expect(ps, T_RBRACKET, "']'"))
				return NULL;
			e = finish(ps, n);
		} else {
			break;
		}
	}
	return e;
}

static struct cel_node *parse_unary(struct parser *ps)
{
	size_t first = ps->pos, last;
	const struct cel_token *t;
	struct cel_node *e, *n;

	while (peek(ps)->kind == T_NOT || peek(ps)->kind == T_MINUS)
		next(ps);
	last = ps->pos;
	t = peek(ps);
	/*
	 * "-9223372036854775808" must be a literal: negating the positive
	 * literal would overflow. Fold only when no member access follows,
	 * since -1.f() means -(1.f()).
	 */
	if (last > first && ps->t[last - 1].kind == T_MINUS &&
	    (t->kind == T_INT || t->kind == T_DOUBLE) &&
	    ps->t[last + 1].kind != T_DOT &&
	    ps->t[last + 1].kind != T_LBRACKET) {
		next(ps);
		e = literal(ps, t, true);
		last--;
	} else {
		e = parse_member(ps);
	}
	while (e && last > first) {
		t = &ps->t[--last];
		n = new_node(ps, t->kind == T_NOT ? N_NOT : N_NEG, t->col);
		if (!n)
			return NULL;
		n->a = e;
		e = finish(ps, n);
	}
	return e;
}

static struct cel_node *parse_mul(struct parser *ps)
{
	struct cel_node *l = parse_unary(ps);
	const struct cel_token *t;

	while (l) {
		t = peek(ps);
		if (t->kind != T_STAR && t->kind != T_SLASH &&
		    t->kind != T_PERCENT)
			break;
		next(ps);
		l = binary(ps, N_BINOP,
			   t->kind == T_STAR    ? OP_MUL
			   : t->kind == T_SLASH ? OP_DIV
						: OP_MOD,
			   t->col, l, parse_unary(ps));
	}
	return l;
}

static struct cel_node *parse_add(struct parser *ps)
{
	struct cel_node *l = parse_mul(ps);
	const struct cel_token *t;

	while (l) {
		t = peek(ps);
		if (t->kind != T_PLUS && t->kind != T_MINUS)
			break;
		next(ps);
		l = binary(ps, N_BINOP, t->kind == T_PLUS ? OP_ADD : OP_SUB,
			   t->col, l, parse_mul(ps));
	}
	return l;
}

static int relop(enum cel_tok k)
{
	switch (k) {
	case T_EQ:
		return OP_EQ;
	case T_NE:
		return OP_NE;
	case T_LT:
		return OP_LT;
	case T_LE:
		return OP_LE;
	case T_GT:
		return OP_GT;
	case T_GE:
		return OP_GE;
	case T_IN:
		return OP_IN;
	default:
		return -1;
	}
}

static struct cel_node *parse_rel(struct parser *ps)
{
	struct cel_node *l = parse_add(ps);
	const struct cel_token *t;

	while (l && relop(peek(ps)->kind) >= 0) {
		t = next(ps);
		l = binary(ps, N_BINOP, relop(t->kind), t->col, l,
			   parse_add(ps));
	}
	return l;
}

static struct cel_node *parse_and(struct parser *ps)
{
	struct cel_node *l = parse_rel(ps);
	const struct cel_token *t;

	while (l && peek(ps)->kind == T_AND) {
		t = next(ps);
		l = binary(ps, N_AND, 0, t->col, l, parse_rel(ps));
	}
	return l;
}

static struct cel_node *parse_or(struct parser *ps)
{
	struct cel_node *l = parse_and(ps);
	const struct cel_token *t;

	while (l && peek(ps)->kind == T_OR) {
		t = next(ps);
		l = binary(ps, N_OR, 0, t->col, l, parse_and(ps));
	}
	return l;
}

static struct cel_node *parse_expr(struct parser *ps)
{
	struct cel_node *c, *n;
	const struct cel_token *t;

	if (++ps->nest > CEL_MAX_NEST)
		return fail(ps, peek(ps)->col,
			    "expression nests too deeply (more than %d levels)",
			    CEL_MAX_NEST);
	c = parse_or(ps);
	if (c && peek(ps)->kind == T_QUESTION) {
		t = next(ps);
		n = new_node(ps, N_COND, t->col);
		if (!n)
			return NULL;
		n->a = c;
		n->b = parse_or(ps);
		if (!n->b || !expect(ps, T_COLON, "':' of the conditional"))
			return NULL;
		n->c = parse_expr(ps);
		if (!n->c)
			return NULL;
		c = finish(ps, n);
	}
	ps->nest--;
	return c;
}

int cel_impl__parse(struct cel_program *p, const struct cel_token *toks,
		    size_t ntok, struct cel_error *err)
{
	struct parser ps = { .p = p, .t = toks, .ntok = ntok, .err = err };

	p->root = parse_expr(&ps);
	if (p->root && peek(&ps)->kind != T_EOF)
		unexpected(&ps);
	if (ps.failed || !p->root) {
		p->root = NULL;
		return -EINVAL;
	}
	return 0;
}
