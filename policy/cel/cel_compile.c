// SPDX-License-Identifier: Apache-2.0
/*
 * cel__compile(): lex, parse, check, then give every node the storage it
 * needs at run time so that cel__eval() never allocates (a computed
 * matches() pattern excepted; see cel_funcs.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cel/cel_impl.h"

static int prepare_node(struct cel_program *p, struct cel_node *n,
			struct cel_error *err)
{
	struct cel_regex *re;
	struct cel_list *l;
	struct cel_map *m;
	char msg[128];

	if (n->kind == N_LIST) {
		l = calloc(1, sizeof(*l) + n->nargs * sizeof(*l->v));
		if (!l)
			return -ENOMEM;
		l->n = n->nargs;
		l->v = (struct cel_value *)(l + 1);
		n->slot = l;
	} else if (n->kind == N_MAP) {
		m = calloc(1, sizeof(*m) + n->nargs * sizeof(*m->k));
		if (!m)
			return -ENOMEM;
		m->n = n->nargs / 2;
		m->k = (struct cel_value *)(m + 1);
		m->v = m->k + m->n;
		n->slot = m;
	} else if (n->kind == N_CALL && n->fn &&
		   !strcmp(n->fn->name, "matches")) {
		re = calloc(1, sizeof(*re));
		if (!re)
			return -ENOMEM;
		n->slot = re;
		if (n->args[1]->kind == N_LIT &&
		    n->args[1]->lit.type == CEL_STRING &&
		    cel_impl__regex_prepare(re, n->args[1]->lit.str.s,
					    n->args[1]->lit.str.len, msg,
					    sizeof(msg))) {
			err->col = n->args[1]->col;
			snprintf(err->msg, sizeof(err->msg),
				 "invalid regular expression: %s", msg);
			return -EINVAL;
		}
	}
	return 0;
}

/*
 * Scratch space: strings are made only by '+' on strings or bytes and by
 * string(); lists only by '+' on lists. Each such node gets a share; a
 * result that outgrows it is an "expression result too large" error.
 */
static void size_scratch(struct cel_program *p)
{
	size_t i, strs = 0, lists = 0, litems = 0;

	for (i = 0; i < p->nnodes; i++) {
		const struct cel_node *n = &p->nodes[i];

		if (n->kind == N_LIST)
			litems += n->nargs;
		if (n->kind == N_BINOP && n->op == OP_ADD) {
			if (n->stype == CEL_LIST || n->stype == CEL_DYN)
				lists++;
			if (n->stype != CEL_LIST)
				strs++;
		}
		if (n->kind == N_CALL && !strcmp(n->fn->name, "string"))
			strs++;
	}
	p->arena_len = CEL_ARENA_MIN + strs * 1024;
	if (p->arena_len > CEL_ARENA_MAX)
		p->arena_len = CEL_ARENA_MAX;
	p->vpool_len = lists ? 256 + lists * (64 + 2 * litems) : 0;
	if (p->vpool_len > CEL_ARENA_MAX / sizeof(struct cel_value))
		p->vpool_len = CEL_ARENA_MAX / sizeof(struct cel_value);
}

struct cel_program *cel__compile(const char *expr, unsigned allowed_vars,
				 struct cel_error *err)
{
	struct cel_token *toks = NULL;
	struct cel_program *p = NULL;
	struct cel_error dummy;
	size_t len, ntok = 0, i;
	int r = -ENOMEM;

	if (!err)
		err = &dummy;
	memset(err, 0, sizeof(*err));
	snprintf(err->msg, sizeof(err->msg), "out of memory");
	len = expr ? strnlen(expr, CEL_MAX_EXPR_LEN + 1) : 0;
	if (len > CEL_MAX_EXPR_LEN) {
		snprintf(err->msg, sizeof(err->msg),
			 "expression is longer than %d bytes",
			 CEL_MAX_EXPR_LEN);
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->allowed = allowed_vars;
	p->srclen = len;
	p->src = strndup(expr ? expr : "", len);
	p->lits = malloc(len + 1);
	if (!p->src || !p->lits)
		goto cleanup;
	r = cel_impl__lex(p->src, len, p->lits, &toks, &ntok, err);
	if (r)
		goto cleanup;
	r = -ENOMEM;
	p->cap = ntok;
	p->argcap = 2 * ntok;
	p->nodes = calloc(p->cap, sizeof(*p->nodes));
	p->argpool = calloc(p->argcap, sizeof(*p->argpool));
	if (!p->nodes || !p->argpool)
		goto cleanup;
	r = cel_impl__parse(p, toks, ntok, err);
	if (r)
		goto cleanup;
	r = cel_impl__check(p, p->root, err);
	if (r)
		goto cleanup;
	for (i = 0; i < p->nnodes; i++) {
		r = prepare_node(p, &p->nodes[i], err);
		if (r)
			goto cleanup;
	}
	size_scratch(p);
	r = -ENOMEM;
	p->arena = malloc(p->arena_len);
	p->vpool = p->vpool_len ? calloc(p->vpool_len, sizeof(*p->vpool))
				: NULL;
	if (!p->arena || (p->vpool_len && !p->vpool))
		goto cleanup;
	free(toks);
	memset(err, 0, sizeof(*err));
	return p;
cleanup:
	if (r == -ENOMEM && !err->msg[0])
		snprintf(err->msg, sizeof(err->msg), "out of memory");
	free(toks);
	cel__free(p);
	return NULL;
}

void cel__free(struct cel_program *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->nnodes; i++) {
		struct cel_node *n = &p->nodes[i];

		if (n->kind == N_CALL && n->slot)
			cel_impl__regex_free(n->slot);
		else
			free(n->slot);
	}
	free(p->nodes);
	free(p->argpool);
	free(p->lits);
	free(p->src);
	free(p->arena);
	free(p->vpool);
	free(p);
}

const char *cel__source(const struct cel_program *p)
{
	return p->src;
}
