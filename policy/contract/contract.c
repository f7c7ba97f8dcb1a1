// SPDX-License-Identifier: Apache-2.0
/*
 * The contract registry: see contract.h for the rules. A load builds a new
 * object table from the source and swaps it in under the lock, so the debug
 * socket can render while the agent reloads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "policy/util/json_out.h"
#include "policy/contract/contract.h"
#include "policy/contract/policy_lint.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

#define KIND_DEF "MetricDefinition"
#define KIND_POL "MetricPolicy"

struct cobj {
	char *kind, *name, *ns, *file;
	uint32_t line;
	struct cond_set conds;
	struct metric_def *def; /* the version in effect, may be older */
	struct metric_policy *pol;
	bool active;        /* in effect: engine uses it */
	bool kept_previous; /* rejected edit, previous version active */
	char **warnings;    /* may be wrong; never a rejection */
	size_t nwarnings;
	struct contract_parent *parents; /* HTTPRoutes checked by `check` */
	size_t nparents;
};

struct contract {
	pthread_mutex_t lock;
	struct cobj *objs;
	size_t n;
	char **errors;
	size_t nerrors;
	char **skipped;
	size_t nskipped;
	struct cluster_identity cluster;
	uint64_t generation;
	const struct manifest_source *schemas; /* installed CRDs, or NULL */
};

struct table {
	struct cobj *objs;
	size_t n;
	char **errors;
	size_t nerrors;
	char **skipped;
	size_t nskipped;
};

static void strs_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int strs_add(char ***v, size_t *n, const char *str)
{
	char **grown = realloc(*v, (*n + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	*v = grown;
	grown[*n] = strdup(str);
	if (!grown[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct cobj *o = &t->objs[i];

		free(o->kind);
		free(o->name);
		free(o->ns);
		free(o->file);
		crd_definition__put(o->def);
		crd_policy__put(o->pol);
		strs_free(o->warnings, o->nwarnings);
		free(o->parents);
	}
	free(t->objs);
	strs_free(t->errors, t->nerrors);
	strs_free(t->skipped, t->nskipped);
	memset(t, 0, sizeof(*t));
}

struct contract *contract__new(void)
{
	struct contract *c = calloc(1, sizeof(*c));

	if (c)
		pthread_mutex_init(&c->lock, NULL);
	return c;
}

void contract__set_schemas(struct contract *c,
			   const struct manifest_source *crds)
{
	c->schemas = crds;
}

void contract__free(struct contract *c)
{
	struct table t;

	if (!c)
		return;
	t = (struct table){ c->objs,    c->n,       c->errors,
			    c->nerrors, c->skipped, c->nskipped };
	table_free(&t);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

static struct cobj *table_add(struct table *t, const struct mobject *m)
{
	struct cobj *o = realloc(t->objs, (t->n + 1) * sizeof(*o));

	if (!o)
		return NULL;
	t->objs = o;
	o = &o[t->n];
	memset(o, 0, sizeof(*o));
	o->kind = strdup(m->kind);
	o->name = strdup(m->name ? m->name : "");
	o->ns = m->ns ? strdup(m->ns) : NULL;
	o->file = strdup(m->file);
	o->line = m->line;
	if (!o->kind || !o->name || !o->file || (m->ns && !o->ns)) {
		free(o->kind);
		free(o->name);
		free(o->ns);
		free(o->file);
		return NULL;
	}
	t->n++;
	return o;
}

static bool same_obj(const struct cobj *o, const char *kind, const char *name,
		     const char *ns)
{
	return !strcmp(o->kind, kind) && !strcmp(o->name, name) &&
	       !strcmp(o->ns ? o->ns : "", ns ? ns : "");
}

static struct cobj *find(struct cobj *objs, size_t n, const char *kind,
			 const char *name, const char *ns)
{
	for (size_t i = 0; i < n; i++)
		if (same_obj(&objs[i], kind, name, ns))
			return &objs[i];
	return NULL;
}

/*
 * Does a win the tie against b? Older creationTimestamp first (RFC 3339 in
 * UTC compares as a string; no timestamp counts as newest), then name.
 */
static bool wins(const char *a_created, const char *a_name,
		 const char *b_created, const char *b_name)
{
	if (a_created && b_created) {
		int c = strcmp(a_created, b_created);

		if (c)
			return c < 0;
	} else if (a_created != b_created) {
		return a_created != NULL;
	}
	return strcmp(a_name, b_name) < 0;
}

static void cobj_warn(void *ctx, const char *msg)
{
	struct cobj *o = ctx;

	/* a warning lost to memory pressure changes no verdict */
	(void)strs_add(&o->warnings, &o->nwarnings, msg);
}

static void reject(struct cobj *o, const struct crd_err *e)
{
	conditions__set(&o->conds, COND_ACCEPTED, COND_FALSE, e->reason, "%s",
			e->msg);
}

static int load_definition(struct contract *c, struct cobj *o,
			   const struct mobject *m)
{
	struct cobj *old = find(c->objs, c->n, o->kind, o->name, o->ns);
	struct metric_def *prev = old && old->active ? old->def : NULL;
	struct metric_def *d = NULL;
	struct crd_err e = { 0 };
	char why[256];
	int err;

	err = crd_definition__parse(m, &d, &e);
	if (err == -ENOMEM)
		return err;
	if (!err && prev && crd_definition__breaks(prev, d, why, sizeof(why))) {
		crd_definition__put(d);
		d = NULL;
		snprintf(e.reason, sizeof(e.reason), "ImmutableFieldChanged");
		snprintf(
			e.msg, sizeof(e.msg),
			"%s:%u: %s; definitions are stable: create a new MetricDefinition instead",
			m->file, m->line, why);
		err = -EINVAL;
	}
	if (!err) {
		o->def = d;
		return 0;
	}
	reject(o, &e);
	if (prev) {
		struct condition *cd = &o->conds.c[0];
		size_t len = strlen(cd->message);

		/* rejected edit: keep serving what consumers already rely on */
		snprintf(
			cd->message + len, sizeof(cd->message) - len,
			" (the previously accepted version from %s:%u stays in effect)",
			prev->file, prev->line);
		o->def = crd_definition__get(prev);
		o->kept_previous = true;
	}
	return 0;
}

static struct cobj *incumbent(struct contract *c, const char *kind,
			      const char *metric, bool policy,
			      const char *src_metric)
{
	for (size_t i = 0; i < c->n; i++) {
		struct cobj *o = &c->objs[i];

		if (!o->active || strcmp(o->kind, kind))
			continue;
		if (!policy && !strcmp(o->def->name, metric))
			return o;
		if (policy && !strcmp(o->pol->target, metric) &&
		    !strcmp(o->pol->src_metric ? o->pol->src_metric : "",
			    src_metric ? src_metric : ""))
			return o;
	}
	return NULL;
}

/* DuplicateMetric: one owner per metric name. */
static void resolve_metric_names(struct contract *c, struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct cobj *o = &t->objs[i], *win = NULL, *inc;
		struct metric_def *od;

		if (!o->def || o->active)
			continue;
		/* o itself may lose below: keep its name alive */
		od = crd_definition__get(o->def);
		inc = incumbent(c, KIND_DEF, od->name, false, NULL);
		for (size_t j = 0; j < t->n; j++) {
			struct cobj *p = &t->objs[j];

			if (!p->def || strcmp(p->def->name, od->name))
				continue;
			if (inc && !strcmp(p->name, inc->name)) {
				win = p;
				break;
			}
			if (!win || wins(p->def->created, p->name,
					 win->def->created, win->name))
				win = p;
		}
		for (size_t j = 0; j < t->n; j++) {
			struct cobj *p = &t->objs[j];

			if (!p->def || strcmp(p->def->name, od->name))
				continue;
			if (p == win) {
				p->active = true;
				if (!p->kept_previous)
					conditions__set(
						&p->conds, COND_ACCEPTED,
						COND_TRUE,
						"TelemetryRegistered",
						"Metric will be exposed when a matching MetricPolicy emits series.");
				continue;
			}
			conditions__set(
				&p->conds, COND_ACCEPTED, COND_FALSE,
				"DuplicateMetric",
				"%s:%u: metric %s is already defined by MetricDefinition %s (%s:%u); rename the metric or delete one of them",
				p->file, p->line, p->def->name, win->name,
				win->file, win->line);
			/* mark handled so the outer loop skips it */
			crd_definition__put(p->def);
			p->def = NULL;
		}
		crd_definition__put(od);
	}
}

static struct cobj *active_def(struct table *t, const char *metric)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->objs[i].def && t->objs[i].active &&
		    !strcmp(t->objs[i].def->name, metric))
			return &t->objs[i];
	return NULL;
}

static bool refs_match(const char *a, const char *b)
{
	return crd__kind_matches(a, b) || crd__kind_matches(b, a);
}

/* Label schema: produced ⊆ schema, required ⊆ produced. */
static bool label_schema(struct cobj *o, const struct metric_def *d)
{
	const struct metric_policy *p = o->pol;

	for (size_t i = 0; i < p->nlabels + p->nstatic; i++) {
		const char *k = i < p->nlabels ? p->labels[i].key
					       : p->static_keys[i - p->nlabels];

		if (!crd_definition__label(d, k)) {
			conditions__set(
				&o->conds, COND_ACCEPTED, COND_FALSE,
				"LabelSchemaMismatch",
				"%s:%u: label \"%s\" is not in the label schema of MetricDefinition %s (%s:%u); add it there or remove it here",
				o->file, o->line, k, d->obj_name, d->file,
				d->line);
			return false;
		}
	}
	for (size_t i = 0; i < d->nlabels; i++) {
		if (d->labels[i].required &&
		    !crd_policy__produces(p, d->labels[i].key)) {
			conditions__set(
				&o->conds, COND_ACCEPTED, COND_FALSE,
				"LabelSchemaMismatch",
				"%s:%u: required label \"%s\" of MetricDefinition %s is not produced; add it to the policy's labels",
				o->file, o->line, d->labels[i].key,
				d->obj_name);
			return false;
		}
	}
	return true;
}

static void check_policy_refs(struct cobj *o, struct table *t)
{
	struct metric_policy *p = o->pol;
	struct cobj *dobj = active_def(t, p->target);
	const struct metric_def *d;

	conditions__set(&o->conds, COND_ACCEPTED, COND_TRUE, "Accepted",
			"Policy is valid.");
	if (!dobj) {
		conditions__set(
			&o->conds, COND_RESOLVED_REFS, COND_FALSE,
			"TargetNotFound",
			"%s:%u: no accepted MetricDefinition has spec.metric.name %s",
			o->file, o->line, p->target);
		return;
	}
	d = dobj->def;
	if (strcmp(d->res_group, p->subj_group) ||
	    !refs_match(d->res_kind, p->subj_kind)) {
		conditions__set(
			&o->conds, COND_RESOLVED_REFS, COND_FALSE,
			"SubjectMismatch",
			"%s:%u: subject %s/%s does not match the resource %s/%s of MetricDefinition %s",
			o->file, o->line, p->subj_group, p->subj_kind,
			d->res_group, d->res_kind, d->obj_name);
		return;
	}
	conditions__set(&o->conds, COND_RESOLVED_REFS, COND_TRUE,
			"ResolvedRefs",
			"Target MetricDefinition %s is accepted.", d->obj_name);
	if (p->type == MP_RESOURCE_FIELDS && d->instrument == MI_HISTOGRAM) {
		conditions__set(
			&o->conds, COND_ACCEPTED, COND_FALSE,
			"IncompatibleInstrument",
			"%s:%u: a ResourceFields policy yields one value per series and cannot feed Histogram %s; use a DataPlane source or a Gauge",
			o->file, o->line, d->name);
		return;
	}
	if (!label_schema(o, d))
		return;
	o->active = true;
}

/* Conflicted: one policy per (target metric, source). */
static void resolve_policy_conflicts(struct contract *c, struct table *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct cobj *o = &t->objs[i], *win = NULL, *inc;
		const char *src;

		if (!o->pol || !o->active)
			continue;
		src = o->pol->src_metric ? o->pol->src_metric : "";
		inc = incumbent(c, KIND_POL, o->pol->target, true, src);
		for (size_t j = 0; j < t->n; j++) {
			struct cobj *p = &t->objs[j];

			if (!p->pol || !p->active ||
			    strcmp(p->pol->target, o->pol->target) ||
			    strcmp(p->pol->src_metric ? p->pol->src_metric : "",
				   src))
				continue;
			if (inc && !strcmp(p->name, inc->name)) {
				win = p;
				break;
			}
			if (!win || wins(p->pol->created, p->name,
					 win->pol->created, win->name))
				win = p;
		}
		for (size_t j = 0; j < t->n; j++) {
			struct cobj *p = &t->objs[j];

			if (p == win || !p->pol || !p->active ||
			    strcmp(p->pol->target, o->pol->target) ||
			    strcmp(p->pol->src_metric ? p->pol->src_metric : "",
				   src))
				continue;
			p->active = false;
			conditions__set(
				&p->conds, COND_ACCEPTED, COND_FALSE,
				"Conflicted",
				"%s:%u: MetricPolicy %s (%s:%u) already feeds %s from %s; a second policy would write the same series again",
				p->file, p->line, win->name, win->file,
				win->line, o->pol->target,
				*src ? src : "resource fields");
		}
	}
}

static int load_table(struct contract *c, const struct manifest_source *src,
		      struct table *t)
{
	const struct mobject *m = NULL;
	size_t glen = strlen(CRD_GROUP);
	int err;

	while ((m = manifest_source__next(src, NULL, m))) {
		bool ours = !strncmp(m->api_version, CRD_GROUP, glen) &&
			    m->api_version[glen] == '/';
		struct crd_err e = { 0 };
		struct cobj *o, *dup;
		size_t dupi;

		if (!ours && !cluster_id__is_property(m))
			continue; /* HTTPRoutes etc.: subjects, not contract */
		dup = find(t->objs, t->n, m->kind, m->name ? m->name : "",
			   m->ns);
		dupi = dup ? (size_t)(dup - t->objs) : 0;
		o = table_add(t, m);
		if (!o)
			return -ENOMEM;
		if (dup) {
			dup = &t->objs[dupi]; /* table_add() may move it */
			conditions__set(
				&o->conds, COND_ACCEPTED, COND_FALSE,
				"DuplicateObject",
				"%s:%u: %s %s is also defined at %s:%u; the first one is used",
				o->file, o->line, o->kind, o->name, dup->file,
				dup->line);
			continue;
		}
		if (!ours) {
			if (cluster_id__check_property(m, &e))
				reject(o, &e);
			else
				conditions__set(
					&o->conds, COND_ACCEPTED, COND_TRUE,
					"Accepted", "%s = %s", o->name,
					doc__str(m->root, "spec.value"));
			continue;
		}
		if (!strcmp(m->kind, KIND_DEF)) {
			err = load_definition(c, o, m);
			if (err)
				return err;
		} else if (!strcmp(m->kind, KIND_POL)) {
			err = crd_policy__parse(m, &o->pol, &e);
			if (err == -ENOMEM)
				return err;
			if (err) {
				reject(o, &e);
			} else if (policy_lint__check(o->pol, src, c->schemas,
						      &e, cobj_warn, o)) {
				/* names what nothing provides: never in effect */
				reject(o, &e);
				crd_policy__put(o->pol);
				o->pol = NULL;
			}
		} else {
			conditions__set(
				&o->conds, COND_ACCEPTED, COND_FALSE,
				"UnknownKind",
				"%s:%u: %s has no kind %s; use MetricDefinition or MetricPolicy",
				o->file, o->line, m->api_version, m->kind);
		}
	}
	resolve_metric_names(c, t);
	for (size_t i = 0; i < t->n; i++)
		if (t->objs[i].pol)
			check_policy_refs(&t->objs[i], t);
	resolve_policy_conflicts(c, t);
	/* the engine may be writing Programmed into the old table */
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < t->n; i++) {
		struct cobj *o = &t->objs[i];
		struct cobj *old;

		if (!strcmp(o->kind, KIND_POL)) {
			if (o->active)
				conditions__set(
					&o->conds, COND_PROGRAMMED,
					COND_UNKNOWN, "Pending",
					"Waiting for the policy engine.");
			else
				conditions__set(
					&o->conds, COND_PROGRAMMED, COND_FALSE,
					"NotAccepted",
					"The policy is not in effect; see Accepted and ResolvedRefs.");
		}
		old = find(c->objs, c->n, o->kind, o->name, o->ns);
		if (old)
			conditions__carry_over(&o->conds, &old->conds);
	}
	pthread_mutex_unlock(&c->lock);
	for (size_t i = 0; i < manifest_source__nerrors(src); i++)
		if (strs_add(&t->errors, &t->nerrors,
			     manifest_source__error(src, i)))
			return -ENOMEM;
	for (size_t i = 0; i < manifest_source__nskipped(src); i++)
		if (strs_add(&t->skipped, &t->nskipped,
			     manifest_source__skipped(src, i)))
			return -ENOMEM;
	return 0;
}

int contract__load(struct contract *c, const struct manifest_source *src)
{
	struct table t = { 0 }, old;
	struct cluster_identity ci;
	int err;

	/* Only load() replaces the table, so reading c->objs here is safe. */
	err = load_table(c, src, &t);
	if (err) {
		table_free(&t);
		return err;
	}
	cluster_id__read(src, &ci);
	pthread_mutex_lock(&c->lock);
	old = (struct table){ c->objs,    c->n,       c->errors,
			      c->nerrors, c->skipped, c->nskipped };
	c->objs = t.objs;
	c->n = t.n;
	c->errors = t.errors;
	c->nerrors = t.nerrors;
	c->skipped = t.skipped;
	c->nskipped = t.nskipped;
	c->cluster = ci;
	c->generation++;
	pthread_mutex_unlock(&c->lock);
	table_free(&old);
	return 0;
}

uint64_t contract__generation(struct contract *c)
{
	uint64_t g;

	pthread_mutex_lock(&c->lock);
	g = c->generation;
	pthread_mutex_unlock(&c->lock);
	return g;
}

static int collect(struct contract *c, bool defs, void ***out, size_t *n)
{
	void **arr;
	size_t k = 0;

	pthread_mutex_lock(&c->lock);
	arr = calloc(c->n + 1, sizeof(*arr));
	if (!arr) {
		pthread_mutex_unlock(&c->lock);
		return -ENOMEM;
	}
	for (size_t i = 0; i < c->n; i++) {
		struct cobj *o = &c->objs[i];

		if (!o->active)
			continue;
		if (defs && o->def)
			arr[k++] = crd_definition__get(o->def);
		else if (!defs && o->pol)
			arr[k++] = crd_policy__get(o->pol);
	}
	pthread_mutex_unlock(&c->lock);
	*out = arr;
	*n = k;
	return 0;
}

int contract__active_defs(struct contract *c, struct metric_def ***out,
			  size_t *n)
{
	return collect(c, true, (void ***)out, n);
}

int contract__active_policies(struct contract *c, struct metric_policy ***out,
			      size_t *n)
{
	return collect(c, false, (void ***)out, n);
}

struct metric_def *contract__find_def(struct contract *c, const char *metric)
{
	struct metric_def *d = NULL;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n && !d; i++)
		if (c->objs[i].active && c->objs[i].def &&
		    !strcmp(c->objs[i].def->name, metric))
			d = crd_definition__get(c->objs[i].def);
	pthread_mutex_unlock(&c->lock);
	return d;
}

void contract__cluster(struct contract *c, struct cluster_identity *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->cluster;
	pthread_mutex_unlock(&c->lock);
}

void contract__set_programmed(struct contract *c, const char *policy, bool ok,
			      const char *reason, const char *fmt, ...)
{
	char msg[COND_MSG_MAX];
	struct cobj *o;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n; i++) {
		o = &c->objs[i];
		if (o->pol && o->active && !strcmp(o->name, policy))
			conditions__set(&o->conds, COND_PROGRAMMED,
					ok ? COND_TRUE : COND_FALSE, reason,
					"%s", msg);
	}
	pthread_mutex_unlock(&c->lock);
}

void contract__set_policy_condition(struct contract *c, const char *policy,
				    const char *type, bool ok,
				    const char *reason, const char *fmt, ...)
{
	char msg[COND_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n; i++) {
		struct cobj *o = &c->objs[i];

		if (o->pol && o->active && !strcmp(o->name, policy))
			conditions__set(&o->conds, type,
					ok ? COND_TRUE : COND_FALSE, reason,
					"%s", msg);
	}
	pthread_mutex_unlock(&c->lock);
}

int contract__conditions(struct contract *c, const char *kind, const char *name,
			 struct cond_set *out)
{
	int err = -ENOENT;

	pthread_mutex_lock(&c->lock);
	for (size_t i = 0; i < c->n; i++) {
		if (!strcmp(c->objs[i].kind, kind) &&
		    !strcmp(c->objs[i].name, name)) {
			*out = c->objs[i].conds;
			err = 0;
			break;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return err;
}

static bool set_rejected(const struct cond_set *cs)
{
	const struct condition *a = conditions__get(cs, COND_ACCEPTED);
	const struct condition *r = conditions__get(cs, COND_RESOLVED_REFS);
	const struct condition *p = conditions__get(cs, COND_PARTIALLY_INVALID);

	return (a && a->status == COND_FALSE) ||
	       (r && r->status == COND_FALSE) || (p && p->status == COND_TRUE);
}

static bool obj_rejected(const struct cobj *o)
{
	bool rej = set_rejected(&o->conds);

	for (size_t i = 0; i < o->nparents && !rej; i++)
		rej = set_rejected(&o->parents[i].conds);
	return rej;
}

static int cobj_cmp(const struct cobj *a, const char *file, uint32_t line)
{
	int c = strcmp(a->file, file);

	return c ? c : (a->line > line) - (a->line < line);
}

int contract__add_object(struct contract *c, const struct contract_object *m)
{
	struct mobject mo = { .kind = m->kind,
			      .name = m->name,
			      .ns = m->ns,
			      .file = m->file,
			      .line = m->line };
	struct table t;
	struct cobj o;
	size_t at;
	int err = -ENOMEM;

	pthread_mutex_lock(&c->lock);
	/* table_add() leaves room for one more: o goes back in file order */
	t = (struct table){ c->objs, c->n };
	if (!table_add(&t, &mo))
		goto out;
	c->objs = t.objs;
	o = c->objs[c->n];
	o.conds = m->conds;
	if (m->nparents) {
		o.parents = calloc(m->nparents, sizeof(*o.parents));
		if (!o.parents)
			goto drop;
		memcpy(o.parents, m->parents, m->nparents * sizeof(*o.parents));
		o.nparents = m->nparents;
	}
	for (size_t i = 0; i < m->nwarnings; i++)
		if (strs_add(&o.warnings, &o.nwarnings, m->warnings[i]))
			goto drop;
	for (at = c->n; at && cobj_cmp(&c->objs[at - 1], o.file, o.line) > 0;
	     at--)
		;
	memmove(&c->objs[at + 1], &c->objs[at], (c->n - at) * sizeof(*c->objs));
	c->objs[at] = o;
	c->n++;
	err = 0;
	goto out;
drop:
	free(o.kind);
	free(o.name);
	free(o.ns);
	free(o.file);
	strs_free(o.warnings, o.nwarnings);
	free(o.parents);
out:
	pthread_mutex_unlock(&c->lock);
	return err;
}

int contract__add_skipped(struct contract *c, const char *what)
{
	int err;

	pthread_mutex_lock(&c->lock);
	err = strs_add(&c->skipped, &c->nskipped, what);
	pthread_mutex_unlock(&c->lock);
	return err;
}

size_t contract__rejected(struct contract *c)
{
	size_t n;

	pthread_mutex_lock(&c->lock);
	n = c->nerrors;
	for (size_t i = 0; i < c->n; i++)
		n += obj_rejected(&c->objs[i]);
	pthread_mutex_unlock(&c->lock);
	return n;
}

static const char *obj_metric(const struct cobj *o)
{
	if (o->def)
		return o->def->name;
	return o->pol ? o->pol->target : NULL;
}

static void json_conds(FILE *f, const struct cond_set *cs)
{
	fputs(",\"conditions\":[", f);
	for (size_t j = 0; j < cs->n; j++) {
		const struct condition *cd = &cs->c[j];

		fputs(j ? ",{\"type\":" : "{\"type\":", f);
		json_out__str(f, cd->type);
		fputs(",\"status\":", f);
		json_out__str(f, conditions__status_str(cd->status));
		fputs(",\"reason\":", f);
		json_out__str(f, cd->reason);
		fputs(",\"message\":", f);
		json_out__str(f, cd->message);
		fprintf(f, ",\"lastTransitionTimeUnixNano\":%llu}",
			(unsigned long long)cd->last_transition_ns);
	}
	fputc(']', f);
}

static void json_strs(FILE *f, char *const *v, size_t n)
{
	fputc('[', f);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', f);
		json_out__str(f, v[i]);
	}
	fputc(']', f);
}

static void render_json(struct contract *c, FILE *f)
{
	fputs("{\"objects\":[", f);
	for (size_t i = 0; i < c->n; i++) {
		const struct cobj *o = &c->objs[i];

		fputs(i ? ",{" : "{", f);
		fputs("\"kind\":", f);
		json_out__str(f, o->kind);
		fputs(",\"name\":", f);
		json_out__str(f, o->name);
		if (o->ns) {
			fputs(",\"namespace\":", f);
			json_out__str(f, o->ns);
		}
		fputs(",\"file\":", f);
		json_out__str(f, o->file);
		fprintf(f, ",\"line\":%u,\"rejected\":%s", o->line,
			obj_rejected(o) ? "true" : "false");
		if (obj_metric(o)) {
			fputs(",\"metric\":", f);
			json_out__str(f, obj_metric(o));
		}
		json_conds(f, &o->conds);
		if (o->nparents) {
			fputs(",\"parents\":[", f);
			for (size_t j = 0; j < o->nparents; j++) {
				fputs(j ? ",{\"parentRef\":"
					: "{\"parentRef\":",
				      f);
				json_out__str(f, o->parents[j].ref);
				json_conds(f, &o->parents[j].conds);
				fputc('}', f);
			}
			fputc(']', f);
		}
		if (o->nwarnings) {
			fputs(",\"warnings\":", f);
			json_strs(f, o->warnings, o->nwarnings);
		}
		fputc('}', f);
	}
	fputs("],\"errors\":", f);
	json_strs(f, c->errors, c->nerrors);
	fputs(",\"skipped\":", f);
	json_strs(f, c->skipped, c->nskipped);
	fputs(",\"cluster\":{\"" CLUSTER_ID_ATTR "\":", f);
	json_out__str(f, c->cluster.id);
	fputs(",\"" CLUSTERSET_ATTR "\":", f);
	json_out__str(f, c->cluster.clusterset);
	fputs(",\"problem\":", f);
	json_out__str(f, c->cluster.problem);
	fputs("}}\n", f);
}

static void text_conds(FILE *f, const struct cond_set *cs, const char *indent)
{
	for (size_t j = 0; j < cs->n; j++) {
		const struct condition *cd = &cs->c[j];

		fprintf(f, "%s%-13s %-7s %-22s %s\n", indent, cd->type,
			conditions__status_str(cd->status), cd->reason,
			cd->message);
	}
}

static void render_text(struct contract *c, FILE *f)
{
	size_t rejected = 0, warnings = 0;

	for (size_t i = 0; i < c->n; i++) {
		const struct cobj *o = &c->objs[i];

		rejected += obj_rejected(o);
		warnings += o->nwarnings;
		fprintf(f, "%s:%u: %s %s%s%s%s%s\n", o->file, o->line, o->kind,
			o->ns ? o->ns : "", o->ns ? "/" : "", o->name,
			obj_metric(o) ? " -> " : "",
			obj_metric(o) ? obj_metric(o) : "");
		text_conds(f, &o->conds, "    ");
		for (size_t j = 0; j < o->nparents; j++) {
			fprintf(f, "    parentRef %s:\n", o->parents[j].ref);
			text_conds(f, &o->parents[j].conds, "      ");
		}
		for (size_t j = 0; j < o->nwarnings; j++)
			fprintf(f, "    warning: %s\n", o->warnings[j]);
	}
	for (size_t i = 0; i < c->nerrors; i++)
		fprintf(f, "error: %s\n", c->errors[i]);
	for (size_t i = 0; i < c->nskipped; i++)
		fprintf(f, "note: %s\n", c->skipped[i]);
	if (c->cluster.id[0] || c->cluster.clusterset[0])
		fprintf(f, "cluster: %s=%s %s=%s\n", CLUSTER_ID_ATTR,
			c->cluster.id[0] ? c->cluster.id : "(none)",
			CLUSTERSET_ATTR,
			c->cluster.clusterset[0] ? c->cluster.clusterset
						 : "(none)");
	if (c->cluster.problem[0])
		fprintf(f, "cluster: %s\n", c->cluster.problem);
	fprintf(f,
		"%zu object(s), %zu rejected, %zu manifest error(s), %zu warning(s), %zu skipped\n",
		c->n, rejected, c->nerrors, warnings, c->nskipped);
}

int contract__render(struct contract *c, FILE *out, unsigned flags)
{
	pthread_mutex_lock(&c->lock);
	if (flags & CONTRACT_RENDER_JSON)
		render_json(c, out);
	else
		render_text(c, out);
	pthread_mutex_unlock(&c->lock);
	return ferror(out) ? -EIO : 0;
}

struct count {
	const char *kind, *type, *reason;
	enum cond_status status;
	uint64_t n;
};

void contract__condition_counts(struct contract *c, contract_count_fn fn,
				void *ctx)
{
	struct count *counts;
	size_t n = 0;

	pthread_mutex_lock(&c->lock);
	counts = calloc(c->n * COND_MAX + 1, sizeof(*counts));
	if (!counts) {
		pthread_mutex_unlock(&c->lock);
		return;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct cobj *o = &c->objs[i];

		for (size_t j = 0; j < o->conds.n; j++) {
			const struct condition *cd = &o->conds.c[j];
			size_t k;

			for (k = 0; k < n; k++)
				if (!strcmp(counts[k].kind, o->kind) &&
				    !strcmp(counts[k].type, cd->type) &&
				    !strcmp(counts[k].reason, cd->reason) &&
				    counts[k].status == cd->status)
					break;
			if (k == n)
				counts[n++] = (struct count){ o->kind, cd->type,
							      cd->reason,
							      cd->status, 0 };
			counts[k].n++;
		}
	}
	for (size_t k = 0; k < n; k++)
		fn(ctx, counts[k].kind, counts[k].type,
		   conditions__status_str(counts[k].status), counts[k].reason,
		   counts[k].n);
	pthread_mutex_unlock(&c->lock);
	free(counts);
}
