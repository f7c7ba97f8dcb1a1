// SPDX-License-Identifier: Apache-2.0
/*
 * The policy engine: see policy_engine.h for the semantics. Compiled state
 * (struct pe_policy) is reference counted so bindings the agent still holds
 * after a rebuild keep working until it binds again. This file builds it;
 * the data plane is policy_engine_bind.c, resource fields
 * policy_engine_fields.c, the shared state policy_engine_impl.h.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpf/fnv1a.h"
#include "policy/contract/contract.h"
#include "policy/contract/contract_uid.h"
#include "policy/source/source_catalogue.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"
#include "policy/contract/policy_engine_impl.h"

/* ---- reference counted pieces ---- */

static void world_put(struct pe_world *w)
{
	if (!w || __atomic_sub_fetch(&w->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (size_t i = 0; i < w->n; i++)
		doc__free(w->objs[i]);
	free(w->objs);
	free(w);
}

void pe_impl__pp_put(struct pe_policy *pp)
{
	if (!pp || __atomic_sub_fetch(&pp->refs, 1, __ATOMIC_ACQ_REL))
		return;
	for (size_t i = 0; i < pp->cap; i++)
		free(pp->tab[i].key);
	free(pp->tab);
	free(pp->subjects);
	world_put(pp->world);
	crd_policy__put(pp->pol);
	crd_definition__put(pp->def);
	free(pp);
}

static struct pe_counters *counters_for(struct policy_engine *e,
					const char *name)
{
	struct pe_counters *c;

	for (c = e->counters; c; c = c->next)
		if (!strcmp(c->name, name))
			return c;
	c = calloc(1, sizeof(*c));
	if (!c || !(c->name = strdup(name))) {
		free(c);
		return NULL;
	}
	c->next = e->counters;
	e->counters = c;
	return c;
}

struct policy_engine *policy_engine__new(struct mstore *store,
					 struct contract *contract)
{
	struct policy_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	pthread_mutex_init(&e->lock, NULL);
	e->store = store;
	e->contract = contract;
	return e;
}

struct mstore *policy_engine__store(struct policy_engine *e)
{
	return e->store;
}

void policy_engine__free(struct policy_engine *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->npols; i++)
		pe_impl__pp_put(e->pols[i]);
	free(e->pols);
	while (e->counters) {
		struct pe_counters *c = e->counters;

		e->counters = c->next;
		free(c->name);
		free(c);
	}
	for (size_t i = 0; i < e->nmetrics; i++)
		free(e->metrics[i].name);
	free(e->metrics);
	pthread_mutex_destroy(&e->lock);
	free(e);
}

uint64_t policy_engine__generation(struct policy_engine *e)
{
	uint64_t g;

	pthread_mutex_lock(&e->lock);
	g = e->generation;
	pthread_mutex_unlock(&e->lock);
	return g;
}

/* ---- evaluation helpers ---- */

/* CEL value to a label value; 1 when null (leave the label out). */
int policy_engine__label_string(const struct cel_value *v, char *buf,
				size_t len)
{
	if (v->type == CEL_NULL)
		return 1;
	if (v->type == CEL_STRING) {
		if (v->str.len >= len)
			return -ENOSPC;
		memcpy(buf, v->str.s, v->str.len);
		buf[v->str.len] = 0;
		return 0;
	}
	return cel__to_string(v, buf, len) < 0 ? -EINVAL : 0;
}

/*
 * Evaluate the policy's labels (and static labels) into out/vals. Returns 0,
 * or -EINVAL when a label the definition requires could not be produced.
 */
int pe_impl__eval_labels(struct pe_policy *pp, const struct cel_activation *act,
			 struct mlabel *out, char (*vals)[LABEL_VALUE_MAX],
			 size_t *n)
{
	const struct metric_policy *p = pp->pol;
	size_t k = 0;

	for (size_t i = 0; i < p->nlabels; i++) {
		const struct mdef_label *dl =
			crd_definition__label(pp->def, p->labels[i].key);
		struct cel_value v;
		struct cel_error err;
		int ret;

		ret = cel__eval(p->labels[i].e.prog, act, &v, &err);
		if (!ret)
			ret = policy_engine__label_string(&v, vals[k],
							  LABEL_VALUE_MAX);
		if (ret) {
			COUNT(pp->cnt, label_errors);
			if (dl && dl->required)
				return -EINVAL;
			continue;
		}
		out[k].key = p->labels[i].key;
		out[k].value = vals[k];
		k++;
	}
	for (size_t i = 0; i < p->nstatic; i++) {
		out[k].key = p->static_keys[i];
		out[k].value = p->static_vals[i];
		k++;
	}
	*n = k;
	return 0;
}

int pe_impl__eval_double(struct cel_program *prog,
			 const struct cel_activation *act, double *out)
{
	struct cel_value v;
	struct cel_error err;

	if (cel__eval(prog, act, &v, &err) || cel__to_double(&v, out) ||
	    !isfinite(*out))
		return -EINVAL;
	return 0;
}

/* ---- rebuild ---- */

static bool wanted(struct metric_policy **pols, size_t n, const char *api,
		   const char *kind, bool *namespaced)
{
	bool any = false;

	*namespaced = false;
	for (size_t i = 0; i < n; i++) {
		if (!crd_policy__subject_matches(pols[i], api, kind))
			continue;
		any = true;
		if (!pols[i]->subj_cluster)
			*namespaced = true;
	}
	return any;
}

static int complete_object(struct doc_node *root, const struct mobject *m,
			   bool namespaced)
{
	struct doc_node *md = (struct doc_node *)doc__get(root, "metadata");
	char uid[37];
	int err;

	if (!md) {
		md = doc__new_map();
		if (!md)
			return -ENOMEM;
		err = doc__map_set(root, "metadata", md);
		if (err) {
			doc__free(md);
			return err;
		}
	}
	if (md->kind != DOC_MAP)
		return 0; /* odd object: selectors will simply not match */
	if (namespaced && !doc__str(md, "namespace")) {
		err = doc__map_set(md, "namespace", doc__new_str("default"));
		if (err)
			return err;
	}
	if (!doc__get(md, "uid")) {
		contract_uid__derive(m->api_version, m->kind,
				     doc__str(md, "namespace"), m->name, uid);
		err = doc__map_set(md, "uid", doc__new_str(uid));
		if (err)
			return err;
	}
	return 0;
}

static struct pe_world *build_world(const struct manifest_source *src,
				    struct metric_policy **pols, size_t np)
{
	struct pe_world *w = calloc(1, sizeof(*w));
	const struct mobject *m = NULL;
	size_t cap = 0;

	if (!w)
		return NULL;
	w->refs = 1;
	while ((m = manifest_source__next(src, NULL, m))) {
		struct doc_node *c;
		bool namespaced;

		if (!wanted(pols, np, m->api_version, m->kind, &namespaced))
			continue;
		if (w->n == cap) {
			struct doc_node **o;

			cap = cap ? cap * 2 : 16;
			o = realloc(w->objs, cap * sizeof(*o));
			if (!o)
				goto fail;
			w->objs = o;
		}
		c = doc__clone(m->root);
		if (!c)
			goto fail;
		w->objs[w->n++] = c;
		if (complete_object(c, m, namespaced))
			goto fail;
	}
	return w;
fail:
	world_put(w);
	return NULL;
}

static uint64_t hash_key(const char *s)
{
	return fnv1a64_str(FNV1A64_OFFSET, s);
}

/* Join the selector values; false when one is missing. */
bool pe_impl__attrs_key(const struct metric_policy *p,
			const struct cel_attr *attrs, size_t n, char *buf,
			size_t len)
{
	size_t off = 0;

	for (size_t i = 0; i < p->nsels; i++) {
		const char *v = NULL;
		size_t vl;

		for (size_t j = 0; j < n && !v; j++)
			if (!strcmp(attrs[j].key, p->sels[i].key))
				v = attrs[j].value;
		if (!v)
			return false;
		vl = strlen(v);
		if (off + vl + 2 > len)
			return false;
		memcpy(buf + off, v, vl);
		off += vl;
		buf[off++] = '\x1f';
	}
	buf[off] = 0;
	return true;
}

static int index_insert(struct pe_policy *pp, const char *key,
			const struct doc_node *obj)
{
	size_t i = hash_key(key) & (pp->cap - 1);

	while (pp->tab[i].key) {
		if (!strcmp(pp->tab[i].key, key))
			return 0; /* first object wins; counted by caller */
		i = (i + 1) & (pp->cap - 1);
	}
	pp->tab[i].key = strdup(key);
	pp->tab[i].obj = obj;
	return pp->tab[i].key ? 1 : -ENOMEM;
}

const struct doc_node *pe_impl__index_find(const struct pe_policy *pp,
					   const char *key)
{
	size_t i;

	if (!pp->cap)
		return NULL;
	for (i = hash_key(key) & (pp->cap - 1); pp->tab[i].key;
	     i = (i + 1) & (pp->cap - 1))
		if (!strcmp(pp->tab[i].key, key))
			return pp->tab[i].obj;
	return NULL;
}

static int build_index(struct pe_policy *pp)
{
	const struct metric_policy *p = pp->pol;
	char key[1024];

	pp->cap = 16;
	while (pp->cap < pp->nsubjects * 2 + 1)
		pp->cap *= 2;
	pp->tab = calloc(pp->cap, sizeof(*pp->tab));
	if (!pp->tab)
		return -ENOMEM;
	for (size_t s = 0; s < pp->nsubjects; s++) {
		struct cel_activation act = { .resource = pp->subjects[s] };
		size_t off = 0;
		bool ok = true;
		int err;

		for (size_t i = 0; i < p->nsels && ok; i++) {
			struct cel_value v;
			struct cel_error cerr;
			char val[LABEL_VALUE_MAX];
			size_t vl;

			if (cel__eval(p->sels[i].e.prog, &act, &v, &cerr) ||
			    policy_engine__label_string(&v, val, sizeof(val))) {
				COUNT(pp->cnt, eval_errors);
				ok = false;
				break;
			}
			vl = strlen(val);
			if (off + vl + 2 > sizeof(key)) {
				ok = false;
				break;
			}
			memcpy(key + off, val, vl);
			off += vl;
			key[off++] = '\x1f';
		}
		if (!ok)
			continue;
		key[off] = 0;
		err = index_insert(pp, key, pp->subjects[s]);
		if (err < 0)
			return err;
		if (!err) /* same selector values as an earlier object */
			COUNT(pp->cnt, ambiguous);
	}
	return 0;
}

static int register_metric(struct policy_engine *e, const struct metric_def *d,
			   const double *bounds, size_t nbounds)
{
	struct mmetric_desc desc = {
		.name = d->name,
		.description = d->description,
		.unit = d->unit,
		.instrument = d->instrument,
		.temporality = d->instrument == MI_GAUGE ? MT_CUMULATIVE
							 : d->temporality,
		.hist = MH_EXPLICIT,
		.bounds = bounds,
		.nbounds = nbounds,
	};
	struct pe_metric *m;
	int id;

	for (size_t i = 0; i < e->nmetrics; i++) {
		if (strcmp(e->metrics[i].name, d->name))
			continue;
		/* two policies (different sources) feed it: the first's bounds */
		if (e->metrics[i].used)
			return e->metrics[i].id;
		id = mstore__add_metric(e->store, &desc);
		if (id == -EEXIST) {
			/* the definition was deleted and recreated differently */
			mstore__remove_metric(e->store, e->metrics[i].id);
			id = mstore__add_metric(e->store, &desc);
		}
		if (id < 0)
			return id;
		e->metrics[i].id = id;
		e->metrics[i].used = true;
		return id;
	}
	id = mstore__add_metric(e->store, &desc);
	if (id < 0)
		return id;
	m = realloc(e->metrics, (e->nmetrics + 1) * sizeof(*m));
	if (!m)
		return -ENOMEM;
	e->metrics = m;
	m[e->nmetrics].name = strdup(d->name);
	if (!m[e->nmetrics].name)
		return -ENOMEM;
	m[e->nmetrics].id = id;
	m[e->nmetrics].used = true;
	e->nmetrics++;
	return id;
}

const char *pe_impl__kind_label(const struct metric_policy *p)
{
	return p->subj_kind;
}

/*
 * A histogram target fed through an affine transform (a > 0) from a
 * histogram source keeps the source's buckets, each bound mapped by the
 * transform: what a translation to Prometheus recording rules or the
 * Collector's scale_metric computes, so both agree bucket for bucket.
 * 0: the definition's default bounds (other transforms, other sources).
 */
#define PE_MAX_BOUNDS 64
static size_t target_bounds(const struct pe_policy *pp, double *out, size_t max)
{
	int n;

	if (pp->pol->type != MP_DATA_PLANE ||
	    pp->def->instrument != MI_HISTOGRAM || !pp->affine)
		return 0;
	n = source_catalogue__rescale(
		source_catalogue__find(pp->pol->src_metric), pp->a, pp->b, out,
		max);
	return n > 0 ? (size_t)n : 0;
}

/*
 * The resource (plural) of a kind as Kubernetes guesses it
 * (apimachinery meta.UnsafeGuessKindToResource): lowercase; "s" ending
 * takes "es", consonant-less "y" ending takes "ies", the rest an "s". A
 * subject kind written in lowercase is taken as the resource already when
 * it ends in "s".
 */
static void kind_resource(const char *kind, char *buf, size_t len)
{
	size_t n = strlen(kind), i;
	bool lower = true;

	for (i = 0; i < n; i++)
		if (kind[i] >= 'A' && kind[i] <= 'Z')
			lower = false;
	if (n + 3 >= len || !n) {
		snprintf(buf, len, "%s", kind);
		return;
	}
	for (i = 0; i <= n; i++)
		buf[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z'
					? kind[i] - 'A' + 'a'
					: kind[i]);
	if (lower && buf[n - 1] == 's')
		return;
	if (buf[n - 1] == 's')
		strcpy(buf + n, "es");
	else if (buf[n - 1] == 'y')
		strcpy(buf + n - 1, "ies");
	else
		strcpy(buf + n, "s");
}

bool pe_impl__subject(const struct metric_policy *p, const struct doc_node *obj,
		      char *buf, size_t len)
{
	const char *kind = doc__str(obj, "kind");
	const char *av = doc__str(obj, "apiVersion");
	const char *slash = av ? strchr(av, '/') : NULL;
	char group[256], res[256];

	if (slash && (size_t)(slash - av) < sizeof(group))
		snprintf(group, sizeof(group), "%.*s", (int)(slash - av), av);
	else
		snprintf(group, sizeof(group), "%s", av ? "" : p->subj_group);
	kind_resource(kind ? kind : p->subj_kind, res, sizeof(res));
	return msubject__format(buf, len, group, res,
				doc__str(obj, "metadata.namespace"),
				doc__str(obj, "metadata.name"));
}

static struct pe_policy *build_policy(struct policy_engine *e,
				      struct metric_policy *pol,
				      struct pe_world *w, int *errp)
{
	double bounds[PE_MAX_BOUNDS];
	size_t nbounds;
	struct pe_policy *pp = calloc(1, sizeof(*pp));
	int err = -ENOMEM;

	if (!pp)
		goto fail;
	pp->refs = 1;
	pp->pol = crd_policy__get(pol);
	pp->def = contract__find_def(e->contract, pol->target);
	pp->world = w;
	__atomic_add_fetch(&w->refs, 1, __ATOMIC_RELAXED);
	pp->cnt = counters_for(e, pol->obj_name);
	if (!pp->cnt)
		goto fail;
	if (!pp->def) {
		/* the contract changed under us: the next sync fixes it */
		err = -EAGAIN;
		goto fail;
	}
	if (pol->type == MP_DATA_PLANE) {
		struct cel_activation act = { 0 };

		pp->a = 1;
		pp->affine = !pol->value.prog ||
			     cel__affine(pol->value.prog, &pp->a, &pp->b);
		if (pp->affine)
			pp->f0 = pp->b;
		else if (pe_impl__eval_double(pol->value.prog, &act, &pp->f0))
			pp->f0 = 0; /* needs attributes/resource: per binding */
	}
	nbounds = target_bounds(pp, bounds, PE_MAX_BOUNDS);
	err = register_metric(e, pp->def, nbounds ? bounds : NULL, nbounds);
	if (err < 0)
		goto fail;
	pp->metric_id = err;
	pp->subjects = calloc(w->n + 1, sizeof(*pp->subjects));
	if (!pp->subjects) {
		err = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < w->n; i++)
		if (crd_policy__subject_matches(
			    pol, doc__str(w->objs[i], "apiVersion"),
			    doc__str(w->objs[i], "kind")))
			pp->subjects[pp->nsubjects++] = w->objs[i];
	if (pol->type == MP_DATA_PLANE) {
		err = build_index(pp);
		if (err)
			goto fail;
	}
	return pp;
fail:
	*errp = err;
	pe_impl__pp_put(pp);
	return NULL;
}

static void initial_programmed(struct policy_engine *e, struct pe_policy *pp,
			       struct pe_policy **old, size_t nold)
{
	const struct metric_policy *p = pp->pol;

	if (!pp->nsubjects) {
		contract__set_programmed(
			e->contract, p->obj_name, false, "NoSubjects",
			"no %s objects match spec.subject (%s)",
			pe_impl__kind_label(p), p->subj_group);
		return;
	}
	if (p->type != MP_DATA_PLANE)
		return; /* set by collect_resource_fields() */
	for (size_t i = 0; i < nold; i++) {
		if (old[i]->pol == p && old[i]->programmed) {
			pp->programmed = true;
			return;
		}
	}
	contract__set_programmed(
		e->contract, p->obj_name, false, "NoSource",
		"no data-plane series %s matched a subject yet", p->src_metric);
}

int policy_engine__sync(struct policy_engine *e,
			const struct manifest_source *src)
{
	uint64_t cg = contract__generation(e->contract);
	uint64_t sg = manifest_source__generation(src);
	struct metric_policy **pols = NULL;
	struct pe_policy **npp = NULL, **old;
	struct pe_world *w = NULL;
	size_t np = 0, k = 0, nold;
	int err;

	/* lock order everywhere: store, then engine (bind runs under both) */
	mstore__lock(e->store);
	pthread_mutex_lock(&e->lock);
	if (e->synced && cg == e->contract_gen && sg == e->src_gen) {
		pthread_mutex_unlock(&e->lock);
		mstore__unlock(e->store);
		return 0;
	}
	err = contract__active_policies(e->contract, &pols, &np);
	if (err)
		goto cleanup;
	w = build_world(src, pols, np);
	npp = calloc(np + 1, sizeof(*npp));
	if (!w || !npp) {
		err = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < e->nmetrics; i++)
		e->metrics[i].used = false;
	for (size_t i = 0; i < np; i++) {
		struct pe_policy *pp = build_policy(e, pols[i], w, &err);

		if (!pp && err == -EAGAIN)
			continue;
		if (!pp)
			goto cleanup;
		npp[k++] = pp;
	}
	/* target metrics no policy feeds any more disappear */
	for (size_t i = 0; i < e->nmetrics;) {
		if (e->metrics[i].used) {
			i++;
			continue;
		}
		mstore__remove_metric(e->store, e->metrics[i].id);
		free(e->metrics[i].name);
		e->metrics[i] = e->metrics[--e->nmetrics];
	}
	for (size_t i = 0; i < k; i++)
		initial_programmed(e, npp[i], e->pols, e->npols);
	old = e->pols;
	nold = e->npols;
	e->pols = npp;
	e->npols = k;
	npp = NULL;
	for (size_t i = 0; i < nold; i++)
		pe_impl__pp_put(old[i]);
	free(old);
	e->contract_gen = cg;
	e->src_gen = sg;
	e->synced = true;
	e->generation++;
	err = 1;
cleanup:
	if (npp) {
		for (size_t i = 0; i < k; i++)
			pe_impl__pp_put(npp[i]);
		free(npp);
	}
	world_put(w);
	for (size_t i = 0; i < np; i++)
		crd_policy__put(pols[i]);
	free(pols);
	pthread_mutex_unlock(&e->lock);
	mstore__unlock(e->store);
	return err;
}

int policy_engine__each_subject(struct policy_engine *e, const char *policy,
				pe_subject_fn fn, void *ctx)
{
	struct pe_policy *pp = NULL;
	int n = 0, err = 0;

	pthread_mutex_lock(&e->lock);
	for (size_t i = 0; i < e->npols && !pp; i++)
		if (!strcmp(e->pols[i]->pol->obj_name, policy))
			pp = e->pols[i];
	if (!pp) {
		pthread_mutex_unlock(&e->lock);
		return -ENOENT;
	}
	if (pp->pol->type != MP_DATA_PLANE) {
		for (size_t s = 0; s < pp->nsubjects && !err; s++, n++)
			err = fn(ctx, NULL, 0, pp->subjects[s]);
		pthread_mutex_unlock(&e->lock);
		return err < 0 ? err : n;
	}
	for (size_t s = 0; s < pp->nsubjects && !err; s++) {
		const struct metric_policy *p = pp->pol;
		struct cel_activation act = { .resource = pp->subjects[s] };
		char vals[8][LABEL_VALUE_MAX], key[1024];
		const char *v[8];
		size_t off = 0, k;

		if (p->nsels > 8)
			break;
		for (k = 0; k < p->nsels; k++) {
			struct cel_value cv;
			struct cel_error cerr;
			size_t vl;

			if (cel__eval(p->sels[k].e.prog, &act, &cv, &cerr) ||
			    policy_engine__label_string(&cv, vals[k],
							sizeof(vals[k])))
				break;
			vl = strlen(vals[k]);
			if (off + vl + 2 > sizeof(key))
				break;
			memcpy(key + off, vals[k], vl);
			off += vl;
			key[off++] = '\x1f';
			v[k] = vals[k];
		}
		key[off] = 0;
		/* the index says which object a key selects: the same answer */
		if (k < p->nsels ||
		    pe_impl__index_find(pp, key) != act.resource)
			continue;
		err = fn(ctx, v, p->nsels, act.resource);
		n++;
	}
	pthread_mutex_unlock(&e->lock);
	return err < 0 ? err : n;
}

void policy_engine__stats(struct policy_engine *e, pe_stats_fn fn, void *ctx)
{
	pthread_mutex_lock(&e->lock);
	for (struct pe_counters *c = e->counters; c; c = c->next) {
		struct pe_stats st = {
			.policy = c->name,
			.bindings =
				__atomic_load_n(&c->bindings, __ATOMIC_RELAXED),
			.unmatched = __atomic_load_n(&c->unmatched,
						     __ATOMIC_RELAXED),
			.records =
				__atomic_load_n(&c->records, __ATOMIC_RELAXED),
			.eval_errors = __atomic_load_n(&c->eval_errors,
						       __ATOMIC_RELAXED),
			.label_errors = __atomic_load_n(&c->label_errors,
							__ATOMIC_RELAXED),
			.dropped =
				__atomic_load_n(&c->dropped, __ATOMIC_RELAXED),
			.series = __atomic_load_n(&c->series, __ATOMIC_RELAXED),
			.ambiguous = __atomic_load_n(&c->ambiguous,
						     __ATOMIC_RELAXED),
		};

		fn(ctx, &st);
	}
	pthread_mutex_unlock(&e->lock);
}
