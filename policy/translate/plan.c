// SPDX-License-Identifier: Apache-2.0
/* Per-policy translation plans: see plan.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/cel/cel.h"
#include "policy/contract/policy_engine.h"
#include "policy/translate/plan.h"

#define VALUE_MAX 256

static void plan_fail(struct tr_plan *p, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void plan_fail(struct tr_plan *p, const char *fmt, ...)
{
	va_list ap;

	if (p->reason[0])
		return; /* the first reason is the one to fix first */
	va_start(ap, fmt);
	vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
	va_end(ap);
}

static int eval_label(struct cel_program *prog, const struct doc_node *obj,
		      char **out)
{
	struct cel_activation act = { .resource = obj };
	struct cel_value v;
	struct cel_error err;
	char buf[VALUE_MAX];
	int ret;

	*out = NULL;
	if (cel__eval(prog, &act, &v, &err))
		return -EINVAL;
	ret = policy_engine__label_string(&v, buf, sizeof(buf));
	if (ret < 0)
		return ret;
	if (ret == 1)
		return 0; /* null: left out */
	*out = strdup(buf);
	return *out ? 0 : -ENOMEM;
}

static int classify_labels(struct tr_plan *p)
{
	const struct metric_policy *pol = p->pol;

	p->labels = calloc(pol->nlabels + pol->nstatic + 1, sizeof(*p->labels));
	if (!p->labels)
		return -ENOMEM;
	for (size_t i = 0; i < pol->nlabels; i++) {
		const struct mp_label *ml = &pol->labels[i];
		const struct mdef_label *dl =
			crd_definition__label(p->def, ml->key);
		struct tr_label *l = &p->labels[p->nlabels++];
		unsigned vars = cel__vars(ml->e.prog), var;
		struct cel_step seg[2];

		l->key = strdup(ml->key);
		if (!l->key)
			return -ENOMEM;
		l->required = dl && dl->required;
		l->prog = ml->e.prog;
		if (!vars) {
			l->kind = TL_CONST;
			if (eval_label(ml->e.prog, NULL, &l->value) == -ENOMEM)
				return -ENOMEM;
			if (!l->value && l->required)
				plan_fail(
					p,
					"label %s: `%s` gives no value and the definition requires it",
					ml->key, ml->e.src);
		} else if (vars == CEL_VAR_RESOURCE) {
			l->kind = TL_RESOURCE;
		} else if (!(vars & (CEL_VAR_ATTRIBUTES | CEL_VAR_VALUE))) {
			l->kind = TL_ITEM;
		} else if (vars == CEL_VAR_ATTRIBUTES &&
			   cel__path(ml->e.prog, &var, seg, 2) == 1 &&
			   !seg[0].index) {
			l->kind = TL_ATTR;
			l->attr = strndup(seg[0].s, seg[0].len);
			if (!l->attr)
				return -ENOMEM;
		} else if (vars & CEL_VAR_ATTRIBUTES) {
			plan_fail(
				p,
				"label %s: `%s` computes over attributes; only a plain attributes['key'] copy (or CEL over resource alone) has an equivalent outside the agent",
				ml->key, ml->e.src);
		}
	}
	for (size_t i = 0; i < pol->nstatic; i++) {
		struct tr_label *l = &p->labels[p->nlabels++];

		l->kind = TL_CONST;
		l->key = strdup(pol->static_keys[i]);
		l->value = strdup(pol->static_vals[i]);
		if (!l->key || !l->value)
			return -ENOMEM;
	}
	return 0;
}

static int add_subject(void *ctx, const char *const *sels, size_t nsels,
		       const struct doc_node *obj)
{
	struct tr_plan *p = ctx;
	struct tr_subject s = { .obj = obj };
	struct tr_subject *ns;
	int err = -ENOMEM;

	s.sels = calloc(nsels + 1, sizeof(*s.sels));
	s.values = calloc(p->nlabels + 1, sizeof(*s.values));
	if (!s.sels || !s.values)
		goto fail;
	for (size_t i = 0; i < nsels; i++)
		if (!(s.sels[i] = strdup(sels[i])))
			goto fail;
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];

		if (l->kind != TL_RESOURCE)
			continue;
		err = eval_label(p->pol->labels[i].e.prog, obj, &s.values[i]);
		if (err == -ENOMEM)
			goto fail;
		if (!s.values[i] && l->required) {
			/* the engine refuses such bindings: so do we */
			err = 0;
			goto fail;
		}
	}
	ns = realloc(p->subjects, (p->nsubjects + 1) * sizeof(*ns));
	if (!ns) {
		err = -ENOMEM;
		goto fail;
	}
	p->subjects = ns;
	p->subjects[p->nsubjects++] = s;
	return 0;
fail:
	for (size_t i = 0; s.sels && i < nsels; i++)
		free(s.sels[i]);
	for (size_t i = 0; s.values && i < p->nlabels; i++)
		free(s.values[i]);
	free(s.sels);
	free(s.values);
	return err;
}

static int plan_dataplane(struct tr_plan *p, struct policy_engine *e)
{
	const struct metric_policy *pol = p->pol;
	enum minstrument tin = p->def->instrument;
	int err;

	p->a = 1;
	p->b = 0;
	p->src = source_catalogue__find(pol->src_metric);
	if (!p->src)
		plan_fail(
			p,
			"source %s: not a metric the data plane produces (known: envoy.http.downstream_rq_total, envoy.http.downstream_rq_time, envoy.cluster.upstream_rq_total, envoy.cluster.upstream_rq_time)",
			pol->src_metric);
	if (pol->value.prog && !cel__affine(pol->value.prog, &p->a, &p->b))
		plan_fail(
			p,
			"value: `%s` is not affine in value (a * value + b over value alone); only the agent evaluates it per sample",
			pol->value.src);
	if (p->src && !p->reason[0]) {
		enum minstrument sin = p->src->instrument;

		if (tin == MI_GAUGE)
			plan_fail(
				p,
				"a Gauge target holds the last sample's transformed value; a scraped cumulative source has no such value");
		else if (tin == MI_HISTOGRAM && sin != MI_HISTOGRAM)
			plan_fail(
				p,
				"a Histogram target fed by the counter %s observes one value per request; a scraped counter has no per-request values",
				pol->src_metric);
		else if (tin == MI_HISTOGRAM && !(p->a > 0))
			plan_fail(
				p,
				"value: `%s` has a scale of %g; a histogram's buckets map to the target's only through an increasing transform (scale > 0)",
				pol->value.src, p->a);
		else if (sin == MI_COUNTER && p->b != 0 &&
			 pol->src_temporality == MT_DELTA)
			plan_fail(
				p,
				"value: `%s` adds %g per request (selector temporality delta); the scraped total does not count requests separately",
				pol->value.src, p->b);
	}
	err = classify_labels(p);
	if (err)
		return err;
	err = policy_engine__each_subject(e, pol->obj_name, add_subject, p);
	if (err == -ENOENT)
		return 0; /* not in effect in the engine (rejected target) */
	return err < 0 ? err : 0;
}

static int by_name(const void *a, const void *b)
{
	const struct tr_plan *x = a, *y = b;

	return strcmp(x->pol->obj_name, y->pol->obj_name);
}

int plan__build(struct contract *c, struct policy_engine *e,
		const char *const *names, size_t nnames, struct tr_plan **out,
		size_t *n, char *err, size_t errlen)
{
	struct metric_policy **pols = NULL;
	struct tr_plan *plans = NULL;
	size_t np = 0, k = 0;
	int ret;

	*out = NULL;
	*n = 0;
	ret = contract__active_policies(c, &pols, &np);
	if (ret)
		return ret;
	for (size_t i = 0; i < nnames; i++) {
		bool found = false;

		for (size_t j = 0; j < np && !found; j++)
			found = !strcmp(pols[j]->obj_name, names[i]);
		if (!found) {
			snprintf(
				err, errlen,
				"--policy %s: no accepted MetricPolicy of that name (milometer check shows why)",
				names[i]);
			ret = -ENOENT;
			goto cleanup;
		}
	}
	plans = calloc(np + 1, sizeof(*plans));
	if (!plans) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < np; i++) {
		struct tr_plan *p;
		bool want = !nnames;

		for (size_t j = 0; j < nnames && !want; j++)
			want = !strcmp(pols[i]->obj_name, names[j]);
		if (!want)
			continue;
		p = &plans[k++];
		p->pol = crd_policy__get(pols[i]);
		p->def = contract__find_def(c, pols[i]->target);
		if (!p->def) {
			plan_fail(p, "no accepted MetricDefinition %s",
				  pols[i]->target);
			continue;
		}
		if (p->pol->type == MP_DATA_PLANE) {
			ret = plan_dataplane(p, e);
		} else {
			ret = classify_labels(p);
			if (!ret)
				ret = policy_engine__each_subject(
					e, p->pol->obj_name, add_subject, p);
			ret = ret == -ENOENT || ret > 0 ? 0 : ret;
		}
		if (ret) {
			snprintf(err, errlen, "out of memory");
			goto cleanup;
		}
	}
	qsort(plans, k, sizeof(*plans), by_name);
	*out = plans;
	*n = k;
	plans = NULL;
	k = 0;
cleanup:
	plan__free(plans, k);
	for (size_t i = 0; i < np; i++)
		crd_policy__put(pols[i]);
	free(pols);
	return ret;
}

void plan__free(struct tr_plan *p, size_t n)
{
	for (size_t i = 0; p && i < n; i++) {
		for (size_t s = 0; s < p[i].nsubjects; s++) {
			for (size_t j = 0; j < p[i].pol->nsels; j++)
				free(p[i].subjects[s].sels[j]);
			for (size_t j = 0; j < p[i].nlabels; j++)
				free(p[i].subjects[s].values[j]);
			free(p[i].subjects[s].sels);
			free(p[i].subjects[s].values);
		}
		free(p[i].subjects);
		for (size_t j = 0; j < p[i].nlabels; j++) {
			free(p[i].labels[j].key);
			free(p[i].labels[j].attr);
			free(p[i].labels[j].value);
		}
		free(p[i].labels);
		crd_policy__put(p[i].pol);
		crd_definition__put(p[i].def);
	}
	free(p);
}
