// SPDX-License-Identifier: Apache-2.0
/*
 * The policy engine's data plane: binding a source series (its attributes)
 * to the target series of every policy that selects it, and recording
 * source values through the policies' transforms.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/metric_store.h"
#include "policy/contract/policy_engine_impl.h"
#include "policy/regex/regex.h"

static bool filters_pass(const struct metric_policy *p,
			 const struct cel_attr *attrs, size_t n)
{
	for (size_t i = 0; i < p->nfilters; i++) {
		const struct mp_filter *f = &p->filters[i];
		const char *v = NULL;

		for (size_t j = 0; j < n && !v; j++)
			if (!strcmp(attrs[j].key, f->key))
				v = attrs[j].value;
		if (!v)
			return false;
		if (f->prefix && strncmp(v, f->prefix, strlen(f->prefix)))
			return false;
		if (f->re && !regex__partial(f->re, v, strlen(v)))
			return false;
	}
	return true;
}

static struct pe_binding *binding_new(struct policy_engine *e, size_t cap,
				      const struct cel_attr *attrs, size_t n)
{
	struct pe_binding *b = calloc(1, sizeof(*b) + cap * sizeof(b->t[0]));
	size_t len = 0;
	char *p;

	if (!b)
		return NULL;
	for (size_t i = 0; i < n; i++)
		len += strlen(attrs[i].key) + strlen(attrs[i].value) + 2;
	b->attrs = calloc(n + 1, sizeof(*b->attrs));
	b->strings = malloc(len + 1);
	if (!b->attrs || !b->strings) {
		free(b->attrs);
		free(b->strings);
		free(b);
		return NULL;
	}
	p = b->strings;
	for (size_t i = 0; i < n; i++) {
		b->attrs[i].key = p;
		p = stpcpy(p, attrs[i].key) + 1;
		b->attrs[i].value = p;
		p = stpcpy(p, attrs[i].value) + 1;
	}
	b->nattrs = n;
	b->store = e->store;
	b->generation = e->generation;
	return b;
}

int policy_engine__bind(struct policy_engine *e, const char *source_metric,
			const struct cel_attr *attrs, size_t nattrs,
			struct pe_binding **out)
{
	struct pe_binding *b = NULL;
	struct mlabel *labels = NULL;
	char(*vals)[LABEL_VALUE_MAX] = NULL;
	size_t cap = 0;
	int err = 0;

	*out = NULL;
	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->npols; i++) {
		const struct metric_policy *p = e->pols[i]->pol;

		if (p->type == MP_DATA_PLANE &&
		    !strcmp(p->src_metric, source_metric))
			cap++;
	}
	if (!cap)
		goto cleanup;
	for (size_t i = 0; i < e->npols; i++)
		if (e->pols[i]->pol->nlabels > cap)
			cap = e->pols[i]->pol->nlabels > cap
				      ? e->pols[i]->pol->nlabels
				      : cap;
	b = binding_new(e, cap, attrs, nattrs);
	labels = calloc(cap + 1, sizeof(*labels));
	vals = calloc(cap + 1, sizeof(*vals));
	if (!b || !labels || !vals) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < e->npols; i++) {
		struct pe_policy *pp = e->pols[i];
		const struct metric_policy *p = pp->pol;
		struct cel_activation act = { .attrs = b->attrs,
					      .nattrs = b->nattrs };
		struct pe_target *t;
		struct mseries *ser;
		char key[1024], subj[1024];
		size_t nl;

		if (p->type != MP_DATA_PLANE ||
		    strcmp(p->src_metric, source_metric) ||
		    !filters_pass(p, attrs, nattrs))
			continue;
		act.resource =
			pe_impl__attrs_key(p, attrs, nattrs, key, sizeof(key))
				? pe_impl__index_find(pp, key)
				: NULL;
		if (!act.resource) {
			COUNT(pp->cnt, unmatched);
			continue;
		}
		if (pe_impl__eval_labels(pp, &act, labels, vals, &nl))
			continue; /* a required label is missing: no binding */
		ser = mstore__series(e->store, pp->metric_id, labels, nl);
		if (!ser ||
		    !pe_impl__subject(p, act.resource, subj, sizeof(subj)) ||
		    mstore__bind(e->store, ser, subj)) {
			/*
			 * out of memory, more than the store's label limit,
			 * or no subject to say who may read it
			 */
			COUNT(pp->cnt, dropped);
			continue;
		}
		mstore__hold(ser);
		t = &b->t[b->n++];
		t->pp = pp;
		__atomic_add_fetch(&pp->refs, 1, __ATOMIC_RELAXED);
		t->ser = ser;
		t->resource = act.resource;
		t->last = pp->f0;
		if (!pp->affine) {
			act.value = 0;
			if (pe_impl__eval_double(p->value.prog, &act, &t->last))
				t->last = 0;
		}
		COUNT(pp->cnt, bindings);
		if (!pp->programmed) {
			pp->programmed = true;
			contract__set_programmed(
				e->contract, p->obj_name, true, "Programmed",
				"data-plane series %s are exported as %s",
				p->src_metric, p->target);
		}
	}
	err = (int)b->n;
	if (b->n) {
		*out = b;
		b = NULL;
	}
cleanup:
	pthread_mutex_unlock(&e->lock);
	pe_binding__free(b);
	free(labels);
	free(vals);
	return err;
}

static int transform(struct pe_binding *b, struct pe_target *t, double v,
		     double *out)
{
	struct pe_policy *pp = t->pp;
	struct cel_activation act;

	if (pp->affine) {
		*out = pp->a * v + pp->b;
		return 0;
	}
	act = (struct cel_activation){ .value = v,
				       .attrs = b->attrs,
				       .nattrs = b->nattrs,
				       .resource = t->resource };
	if (pe_impl__eval_double(pp->pol->value.prog, &act, out)) {
		COUNT(pp->cnt, eval_errors);
		return -EINVAL;
	}
	return 0;
}

void pe_binding__record(struct pe_binding *b, double value, uint64_t now_ns)
{
	for (size_t i = 0; i < b->n; i++) {
		struct pe_target *t = &b->t[i];
		struct pe_policy *pp = t->pp;
		enum minstrument ins = pp->def->instrument;
		double out;

		COUNT(pp->cnt, records);
		if (ins == MI_COUNTER || ins == MI_UPDOWN) {
			if (pp->pol->src_temporality == MT_DELTA) {
				if (transform(b, t, value, &out))
					goto drop;
			} else if (pp->affine) {
				out = pp->a * value;
			} else {
				double f;

				if (transform(b, t, t->total + value, &f))
					goto drop;
				t->total += value;
				out = f - t->last;
				t->last = f;
			}
			if (ins == MI_COUNTER && out < 0)
				goto drop; /* a counter never goes down */
			mseries__add(t->ser, out, now_ns);
			continue;
		}
		if (transform(b, t, value, &out))
			goto drop;
		if (ins == MI_GAUGE)
			mseries__set(t->ser, out, now_ns);
		else
			mseries__observe(t->ser, out, now_ns);
		continue;
drop:
		COUNT(pp->cnt, dropped);
	}
}

uint64_t pe_binding__generation(const struct pe_binding *b)
{
	return b->generation;
}

size_t pe_binding__targets(const struct pe_binding *b)
{
	return b ? b->n : 0;
}

void pe_binding__free(struct pe_binding *b)
{
	if (!b)
		return;
	for (size_t i = 0; i < b->n; i++) {
		mstore__release(b->store, b->t[i].ser);
		pe_impl__pp_put(b->t[i].pp);
	}
	free(b->attrs);
	free(b->strings);
	free(b);
}
