// SPDX-License-Identifier: Apache-2.0
/* MetricPolicy reader, validator and CEL compiler: see crd_policy.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/cel/cel.h"
#include "policy/contract/crd_policy.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

static void expr_free(struct mp_expr *x)
{
	free(x->src);
	cel__free(x->prog);
}

static void policy_free(struct metric_policy *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->nsels; i++) {
		free(p->sels[i].key);
		expr_free(&p->sels[i].e);
	}
	free(p->sels);
	for (size_t i = 0; i < p->nfilters; i++) {
		free(p->filters[i].key);
		free(p->filters[i].prefix);
		regex__free(p->filters[i].re);
		free(p->filters[i].re_src);
	}
	free(p->filters);
	for (size_t i = 0; i < p->nlabels; i++) {
		free(p->labels[i].key);
		expr_free(&p->labels[i].e);
	}
	free(p->labels);
	for (size_t i = 0; i < p->nstatic; i++) {
		free(p->static_keys[i]);
		free(p->static_vals[i]);
	}
	free(p->static_keys);
	free(p->static_vals);
	expr_free(&p->value);
	expr_free(&p->rf_value);
	expr_free(&p->drop_if);
	free(p->obj_name);
	free(p->file);
	free(p->created);
	free(p->subj_group);
	free(p->subj_version);
	free(p->subj_kind);
	free(p->target);
	free(p->src_metric);
	free(p->series_path);
	free(p);
}

struct metric_policy *crd_policy__get(struct metric_policy *p)
{
	if (p)
		__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

void crd_policy__put(struct metric_policy *p)
{
	if (p && __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL) == 0)
		policy_free(p);
}

/* Compile the string node n into x; InvalidCEL names where and why. */
static int compile(const struct doc_node *n, const char *path, unsigned vars,
		   struct mp_expr *x, struct crd_err *e)
{
	struct cel_error cerr = { 0 };

	if (!n || n->kind != DOC_STRING || !n->str.len)
		return crd__fail(
			e, "InvalidField", n, path,
			"must be a non-empty CEL expression string, found %s",
			n ? doc__kind_name(n->kind) : "nothing");
	x->src = strdup(n->str.s);
	x->line = n->line;
	if (!x->src)
		return -ENOMEM;
	x->prog = cel__compile(n->str.s, vars, &cerr);
	if (!x->prog)
		/* the reason first: a long expression must not push it
		 * past the end of the (bounded) condition message */
		return crd__fail(e, "InvalidCEL", n, path,
				 "column %d: %s; in `%.160s%s`", cerr.col,
				 cerr.msg, n->str.s,
				 n->str.len > 160 ? "..." : "");
	return 0;
}

/* {cel: "..."} */
static int compile_cel_block(const struct doc_node *blk, const char *path,
			     unsigned vars, struct mp_expr *x,
			     struct crd_err *e)
{
	static const char *const f[] = { "cel", NULL };
	char p[128];
	int err;

	err = crd__check_map(blk, path, f, e);
	if (err)
		return err;
	snprintf(p, sizeof(p), "%s.cel", path);
	if (!doc__get(blk, "cel"))
		return crd__fail(e, "InvalidField", blk, path,
				 "required field \"cel\" is missing");
	return compile(doc__get(blk, "cel"), p, vars, x, e);
}

static int parse_labels(const struct doc_node *m, const char *path,
			unsigned vars, struct metric_policy *p,
			struct crd_err *e)
{
	char lp[192];
	int err;

	if (!m || m->kind == DOC_NULL)
		return 0;
	if (m->kind != DOC_MAP)
		return crd__fail(
			e, "InvalidField", m, path,
			"expected a map of label key to CEL expression, found %s",
			doc__kind_name(m->kind));
	p->labels = calloc(m->map.n + 1, sizeof(*p->labels));
	if (!p->labels)
		return -ENOMEM;
	for (size_t i = 0; i < m->map.n; i++) {
		struct mp_label *l = &p->labels[p->nlabels];

		l->key = strdup(m->map.keys[i]);
		if (!l->key)
			return -ENOMEM;
		p->nlabels++;
		snprintf(lp, sizeof(lp), "%s.%s", path, m->map.keys[i]);
		err = compile(m->map.vals[i], lp, vars, &l->e, e);
		if (err)
			return err;
	}
	return 0;
}

static int parse_subject(const struct doc_node *s, struct metric_policy *p,
			 struct crd_err *e)
{
	static const char *const f[] = { "group", "apiGroup", "version",
					 "kind",  "resource", "scope",
					 NULL };
	const char *group, *apigroup, *version, *kind, *res, *scope;
	int err;

	err = crd__check_map(s, "spec.subject", f, e);
	if (!err)
		err = crd__opt_str(s, "group", "spec.subject", &group, e);
	if (!err)
		err = crd__opt_str(s, "apiGroup", "spec.subject", &apigroup, e);
	if (!err)
		err = crd__opt_str(s, "version", "spec.subject", &version, e);
	if (!err)
		err = crd__opt_str(s, "kind", "spec.subject", &kind, e);
	if (!err)
		err = crd__opt_str(s, "resource", "spec.subject", &res, e);
	if (!err)
		err = crd__opt_str(s, "scope", "spec.subject", &scope, e);
	if (err)
		return err;
	if (group && apigroup)
		return crd__fail(e, "InvalidField", s, "spec.subject",
				 "set group or apiGroup, not both");
	if (!kind == !res)
		return crd__fail(e, "InvalidField", s, "spec.subject",
				 "set exactly one of kind or resource");
	if (scope && strcmp(scope, "Namespaced") && strcmp(scope, "Cluster"))
		return crd__fail(e, "InvalidField", doc__get(s, "scope"),
				 "spec.subject.scope",
				 "\"%s\" is not Namespaced or Cluster", scope);
	p->subj_group = strdup(group ? group : apigroup ? apigroup : "");
	p->subj_version = crd__strdup(version);
	p->subj_kind = strdup(kind ? kind : res);
	p->subj_cluster = scope && !strcmp(scope, "Cluster");
	return p->subj_group && p->subj_kind ? 0 : -ENOMEM;
}

static int parse_selector(const struct doc_node *sel, struct metric_policy *p,
			  struct crd_err *e)
{
	static const char *const sel_f[] = { "otel", NULL };
	static const char *const otel_f[] = { "metricName", "temporality",
					      "attributeSelectors",
					      "attributeFilters", NULL };
	static const char *const as_f[] = { "key", "valueFrom", NULL };
	static const char *const af_f[] = { "key", "regex", "prefix", NULL };
	const char *path = "spec.source.dataPlane.selector.otel";
	const struct doc_node *otel, *as, *af;
	const char *metric, *temp;
	char ip[128];
	int err;

	err = crd__check_map(sel, "spec.source.dataPlane.selector", sel_f, e);
	if (err)
		return err;
	otel = doc__get(sel, "otel");
	err = crd__check_map(otel, path, otel_f, e);
	if (err)
		return err;
	metric = crd__req_str(otel, "metricName", path, e);
	if (!metric)
		return -EINVAL;
	p->src_metric = strdup(metric);
	p->src_metric_line = doc__get(otel, "metricName")->line;
	err = crd__opt_str(otel, "temporality", path, &temp, e);
	if (err)
		return err;
	p->src_temporality = MT_CUMULATIVE;
	if (temp && !strcasecmp(temp, "delta"))
		p->src_temporality = MT_DELTA;
	else if (temp && strcasecmp(temp, "cumulative"))
		return crd__fail(
			e, "InvalidField", doc__get(otel, "temporality"),
			"spec.source.dataPlane.selector.otel.temporality",
			"\"%s\" is not cumulative or delta", temp);

	as = doc__get(otel, "attributeSelectors");
	if (as && as->kind != DOC_LIST)
		return crd__fail(
			e, "InvalidField", as,
			"spec.source.dataPlane.selector.otel.attributeSelectors",
			"expected a list, found %s", doc__kind_name(as->kind));
	if (as) {
		p->sels = calloc(as->list.n + 1, sizeof(*p->sels));
		if (!p->sels)
			return -ENOMEM;
		for (size_t i = 0; i < as->list.n; i++) {
			const struct doc_node *it = as->list.items[i];
			struct mp_selector *s = &p->sels[p->nsels];
			const char *key;

			snprintf(ip, sizeof(ip), "%s.attributeSelectors[%zu]",
				 path, i);
			err = crd__check_map(it, ip, as_f, e);
			if (err)
				return err;
			key = crd__req_str(it, "key", ip, e);
			if (!key)
				return -EINVAL;
			s->key_line = doc__get(it, "key")->line;
			s->key = strdup(key);
			if (!s->key)
				return -ENOMEM;
			p->nsels++;
			strncat(ip, ".valueFrom", sizeof(ip) - strlen(ip) - 1);
			if (!doc__get(it, "valueFrom"))
				return crd__fail(e, "InvalidField", it, ip,
						 "required field is missing");
			err = compile(doc__get(it, "valueFrom"), ip,
				      CEL_VAR_RESOURCE, &s->e, e);
			if (err)
				return err;
		}
	}

	/* without selectors a sample cannot be attributed to one object */
	if (!p->nsels)
		return crd__fail(
			e, "InvalidField", as ? as : otel,
			"spec.source.dataPlane.selector.otel.attributeSelectors",
			"at least one selector is required to attribute samples to a %s",
			p->subj_kind);

	af = doc__get(otel, "attributeFilters");
	if (af && af->kind != DOC_LIST)
		return crd__fail(
			e, "InvalidField", af,
			"spec.source.dataPlane.selector.otel.attributeFilters",
			"expected a list, found %s", doc__kind_name(af->kind));
	if (af) {
		size_t nre = 0;

		p->filters = calloc(af->list.n + 1, sizeof(*p->filters));
		if (!p->filters)
			return -ENOMEM;
		for (size_t i = 0; i < af->list.n; i++) {
			const struct doc_node *it = af->list.items[i];
			struct mp_filter *f = &p->filters[p->nfilters];
			const char *key, *re, *prefix;
			char why[256];
			int rc;

			snprintf(ip, sizeof(ip), "%s.attributeFilters[%zu]",
				 path, i);
			err = crd__check_map(it, ip, af_f, e);
			if (err)
				return err;
			key = crd__req_str(it, "key", ip, e);
			if (!key)
				return -EINVAL;
			err = crd__opt_str(it, "regex", ip, &re, e);
			if (!err)
				err = crd__opt_str(it, "prefix", ip, &prefix,
						   e);
			if (err)
				return err;
			if (!re == !prefix)
				return crd__fail(
					e, "InvalidField", it, ip,
					"set exactly one of regex or prefix");
			f->key = strdup(key);
			f->key_line = doc__get(it, "key")->line;
			f->prefix = crd__strdup(prefix);
			p->nfilters++;
			if (!f->key || (prefix && !f->prefix))
				return -ENOMEM;
			if (!re)
				continue;
			/* each compiled pattern may hold REGEX_MAX_MEM */
			f->re_src = strdup(re);
			if (!f->re_src)
				return -ENOMEM;
			if (++nre > MP_MAX_FILTER_REGEXES)
				return crd__fail(
					e, "InvalidField", it, ip,
					"more than %d regex filters in one policy (each one holds memory)",
					MP_MAX_FILTER_REGEXES);
			rc = regex__compile(re, strlen(re), &f->re, why,
					    sizeof(why));
			if (rc == -ENOMEM)
				return rc;
			if (rc)
				return crd__fail(
					e, "InvalidField",
					doc__get(it, "regex"), ip,
					"invalid regex: %s; the pattern: \"%.200s%s\"",
					why, re, strlen(re) > 200 ? "..." : "");
		}
	}
	return p->src_metric ? 0 : -ENOMEM;
}

static int parse_data_plane(const struct doc_node *dp, struct metric_policy *p,
			    struct crd_err *e)
{
	static const char *const dp_f[] = { "selector", "transform", "sampling",
					    NULL };
	static const char *const tr_f[] = { "value", "labels", NULL };
	static const char *const sa_f[] = { "maxSamplesPerSecond",
					    "dropOnBackpressure", NULL };
	const char *path = "spec.source.dataPlane";
	const struct doc_node *tr, *sa;
	int err;

	err = crd__check_map(dp, path, dp_f, e);
	if (err)
		return err;
	if (!doc__get(dp, "selector"))
		return crd__fail(e, "InvalidField", dp, path,
				 "required field \"selector\" is missing");
	err = parse_selector(doc__get(dp, "selector"), p, e);
	if (err)
		return err;
	/* sampling is an implementation hint: checked, not enforced */
	sa = doc__get(dp, "sampling");
	if (sa) {
		err = crd__check_map(sa, "spec.source.dataPlane.sampling", sa_f,
				     e);
		if (err)
			return err;
	}
	tr = doc__get(dp, "transform");
	if (!tr)
		return 0; /* pass-through value, no labels */
	err = crd__check_map(tr, "spec.source.dataPlane.transform", tr_f, e);
	if (err)
		return err;
	if (doc__get(tr, "value")) {
		err = compile_cel_block(doc__get(tr, "value"),
					"spec.source.dataPlane.transform.value",
					CEL_VAR_VALUE | CEL_VAR_ATTRIBUTES |
						CEL_VAR_RESOURCE,
					&p->value, e);
		if (err)
			return err;
	}
	return parse_labels(doc__get(tr, "labels"),
			    "spec.source.dataPlane.transform.labels",
			    CEL_VAR_ATTRIBUTES | CEL_VAR_RESOURCE, p, e);
}

static int parse_static(const struct doc_node *m, struct metric_policy *p,
			struct crd_err *e)
{
	const char *path = "spec.source.resourceFields.staticLabels";

	if (!m || m->kind == DOC_NULL)
		return 0;
	if (m->kind != DOC_MAP)
		return crd__fail(
			e, "InvalidField", m, path,
			"expected a map of label key to string, found %s",
			doc__kind_name(m->kind));
	p->static_keys = calloc(m->map.n + 1, sizeof(char *));
	p->static_vals = calloc(m->map.n + 1, sizeof(char *));
	if (!p->static_keys || !p->static_vals)
		return -ENOMEM;
	for (size_t i = 0; i < m->map.n; i++) {
		const struct doc_node *v = m->map.vals[i];

		if (v->kind != DOC_STRING)
			return crd__fail(
				e, "InvalidField", v, path,
				"value of \"%s\" must be a string (quote it), found %s",
				m->map.keys[i], doc__kind_name(v->kind));
		p->static_keys[i] = strdup(m->map.keys[i]);
		p->static_vals[i] = strdup(v->str.s);
		p->nstatic++;
		if (!p->static_keys[i] || !p->static_vals[i])
			return -ENOMEM;
	}
	return 0;
}

static int parse_resource_fields(const struct doc_node *rf,
				 struct metric_policy *p, struct crd_err *e)
{
	static const char *const rf_f[] = { "seriesFrom", "dropIf",
					    "staticLabels", NULL };
	static const char *const sf_f[] = { "path", "value", "labels", NULL };
	const char *path = "spec.source.resourceFields.seriesFrom";
	const struct doc_node *sf;
	const char *sp;
	int err;

	err = crd__check_map(rf, "spec.source.resourceFields", rf_f, e);
	if (err)
		return err;
	sf = doc__get(rf, "seriesFrom");
	err = crd__check_map(sf, path, sf_f, e);
	if (err)
		return err;
	sp = crd__req_str(sf, "path", path, e);
	if (!sp)
		return -EINVAL;
	if (!strcmp(sp, "resource"))
		sp = "";
	else if (!strncmp(sp, "resource.", 9) && sp[9] &&
		 sp[strlen(sp) - 1] != '.' && !strstr(sp, ".."))
		sp += 9;
	else
		return crd__fail(
			e, "InvalidField", doc__get(sf, "path"),
			"spec.source.resourceFields.seriesFrom.path",
			"\"%s\" must be \"resource\" or \"resource.<field>.<field>...\"",
			sp);
	p->series_path = strdup(sp);
	if (!p->series_path)
		return -ENOMEM;
	p->series_path_line = doc__get(sf, "path")->line;
	if (!doc__get(sf, "value"))
		return crd__fail(e, "InvalidField", sf, path,
				 "required field \"value\" is missing");
	err = compile_cel_block(doc__get(sf, "value"),
				"spec.source.resourceFields.seriesFrom.value",
				CEL_VAR_RESOURCE | CEL_VAR_ITEM, &p->rf_value,
				e);
	if (err)
		return err;
	err = parse_labels(doc__get(sf, "labels"),
			   "spec.source.resourceFields.seriesFrom.labels",
			   CEL_VAR_RESOURCE | CEL_VAR_ITEM, p, e);
	if (err)
		return err;
	if (doc__get(rf, "dropIf")) {
		err = compile_cel_block(doc__get(rf, "dropIf"),
					"spec.source.resourceFields.dropIf",
					CEL_VAR_RESOURCE | CEL_VAR_ITEM,
					&p->drop_if, e);
		if (err)
			return err;
	}
	return parse_static(doc__get(rf, "staticLabels"), p, e);
}

static int parse_source(const struct doc_node *src, struct metric_policy *p,
			struct crd_err *e)
{
	static const char *const f[] = { "type", "resourceFields", "dataPlane",
					 NULL };
	const char *type;
	int err;

	err = crd__check_map(src, "spec.source", f, e);
	if (err)
		return err;
	type = crd__req_str(src, "type", "spec.source", e);
	if (!type)
		return -EINVAL;
	if (!strcmp(type, "ResourceFields"))
		p->type = MP_RESOURCE_FIELDS;
	else if (!strcmp(type, "DataPlane"))
		p->type = MP_DATA_PLANE;
	else
		return crd__fail(e, "InvalidField", doc__get(src, "type"),
				 "spec.source.type",
				 "\"%s\" is not ResourceFields or DataPlane",
				 type);
	/* one source type at a time */
	if (p->type == MP_RESOURCE_FIELDS) {
		if (doc__get(src, "dataPlane"))
			return crd__fail(
				e, "InvalidField", doc__get(src, "dataPlane"),
				"spec.source",
				"type is ResourceFields: remove dataPlane");
		if (!doc__get(src, "resourceFields"))
			return crd__fail(
				e, "InvalidField", src, "spec.source",
				"type is ResourceFields: resourceFields is required");
		return parse_resource_fields(doc__get(src, "resourceFields"), p,
					     e);
	}
	if (doc__get(src, "resourceFields"))
		return crd__fail(e, "InvalidField",
				 doc__get(src, "resourceFields"), "spec.source",
				 "type is DataPlane: remove resourceFields");
	if (!doc__get(src, "dataPlane"))
		return crd__fail(e, "InvalidField", src, "spec.source",
				 "type is DataPlane: dataPlane is required");
	return parse_data_plane(doc__get(src, "dataPlane"), p, e);
}

int crd_policy__parse(const struct mobject *o, struct metric_policy **out,
		      struct crd_err *e)
{
	static const char *const spec_f[] = { "subject", "targetMetric",
					      "source", NULL };
	static const char *const tm_f[] = { "name", NULL };
	const struct doc_node *spec, *tm;
	struct metric_policy *p;
	const char *target;
	int err;

	*out = NULL;
	err = crd__check_object(o, e);
	if (err)
		return err;
	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->refs = 1;
	p->obj_name = strdup(o->name);
	p->file = strdup(o->file);
	p->line = o->line;
	p->created =
		crd__strdup(doc__str(o->root, "metadata.creationTimestamp"));
	if (!p->obj_name || !p->file) {
		err = -ENOMEM;
		goto cleanup;
	}
	spec = doc__get(o->root, "spec");
	err = crd__check_map(spec, "spec", spec_f, e);
	if (err)
		goto cleanup;
	err = parse_subject(doc__get(spec, "subject"), p, e);
	if (err)
		goto cleanup;
	tm = doc__get(spec, "targetMetric");
	err = crd__check_map(tm, "spec.targetMetric", tm_f, e);
	if (err)
		goto cleanup;
	target = crd__req_str(tm, "name", "spec.targetMetric", e);
	if (!target) {
		err = -EINVAL;
		goto cleanup;
	}
	p->target = strdup(target);
	if (!p->target) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = parse_source(doc__get(spec, "source"), p, e);
	if (err)
		goto cleanup;
	*out = p;
	return 0;
cleanup:
	if (err == -ENOMEM)
		crd__fail(e, "Internal", NULL, NULL, "out of memory");
	policy_free(p);
	return err;
}

bool crd_policy__subject_matches(const struct metric_policy *p,
				 const char *api_version, const char *kind)
{
	const char *slash = api_version ? strchr(api_version, '/') : NULL;
	size_t glen = slash ? (size_t)(slash - api_version) : 0;
	const char *version = slash ? slash + 1 : api_version;

	if (!api_version || !crd__kind_matches(kind, p->subj_kind))
		return false;
	if (strlen(p->subj_group) != glen ||
	    strncmp(p->subj_group, api_version, glen))
		return false;
	return !p->subj_version || !strcmp(p->subj_version, version);
}

bool crd_policy__produces(const struct metric_policy *p, const char *key)
{
	for (size_t i = 0; i < p->nlabels; i++)
		if (!strcmp(p->labels[i].key, key))
			return true;
	for (size_t i = 0; i < p->nstatic; i++)
		if (!strcmp(p->static_keys[i], key))
			return true;
	return false;
}
