// SPDX-License-Identifier: Apache-2.0
/*
 * The kube-state-metrics target: a CustomResourceState configuration for
 * the ResourceFields policies, one resource entry per subject kind with
 * metricNamePrefix "" and each metric named as milometer's controller
 * exposes it (exporter/prom_names.c).
 *
 *   seriesFrom.path resource.a.b        each.gauge.path [a, b] (a list: one
 *                                       series per element, as item)
 *   value item.x / resource.x           valueFrom (relative to the path)
 *   value F == 'True' ? 1 : 0           valueFrom F: KSM reads True as 1,
 *                                       False and Unknown as 0
 *   value int(timestamp(F))             the RFC 3339 field: KSM reads
 *                                       Unix seconds
 *   value 1                             type Info
 *   labels item.x                       each.*.labelsFromPath (relative)
 *   labels resource.x, string(...)      labelsFromPath from the object root
 *   staticLabels, constant labels       commonLabels
 *
 * kube-state-metrics adds customresource_group/_version/_kind to every
 * series; the scrape job drops them (the header says how). dropIf, CEL
 * that computes, and fields KSM would convert differently are refused.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_names.h"
#include "policy/cel/cel.h"
#include "policy/source/doc.h"
#include "policy/translate/translate_impl.h"

#define MAX_SEGS 16

struct ksm_metric {
	const struct tr_plan *p;
	const char *group, *version, *kind;
	char name[512];
	enum cel_shape shape;
	struct cel_step val[MAX_SEGS];
	int nval;
	bool val_item; /* value path relative to the series path */
};

/* A YAML flow sequence of path steps: [status, conditions, "0", name]. */
static void put_path(FILE *f, const struct cel_step *s, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++) {
		if (i)
			fputs(", ", f);
		if (s[i].index)
			fprintf(f, "\"%zu\"", s[i].len);
		else
			fprintf(f, "\"%.*s\"", (int)s[i].len, s[i].s);
	}
	fputc(']', f);
}

/* The series path below resource ("" = the object) as steps. */
static int series_path(const char *dotted, char *buf, size_t len,
		       struct cel_step *s, int max)
{
	int n = 0;

	snprintf(buf, len, "%s", dotted);
	for (char *p = buf; *p && n < max;) {
		char *dot = strchr(p, '.');

		s[n++] = (struct cel_step){ p,
					    dot ? (size_t)(dot - p) : strlen(p),
					    false };
		if (!dot)
			break;
		p = dot + 1;
	}
	return n;
}

static void put_yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
	fputc('"', f);
}

/* Why this policy has no CustomResourceState equivalent, or NULL. */
static const char *analyse(struct ksm_metric *m, char *why, size_t len)
{
	const struct tr_plan *p = m->p;
	const struct metric_policy *pol = p->pol;
	unsigned var = 0;

	if (pol->type != MP_RESOURCE_FIELDS)
		return "a DataPlane policy reads data-plane samples, not API objects: use --target prometheus-rules or otelcol";
	if (pol->drop_if.prog) {
		snprintf(
			why, len,
			"dropIf: `%s`: CustomResourceState has no per-object filter",
			pol->drop_if.src);
		return why;
	}
	if (!p->nsubjects)
		return "no subject objects in the manifests to learn the kind from";
	m->shape = cel__value_shape(pol->rf_value.prog, &var, m->val, MAX_SEGS,
				    &m->nval);
	if (m->shape == CEL_SHAPE_OTHER) {
		snprintf(
			why, len,
			"value: `%s`: CustomResourceState reads a field (or field == 'True' ? 1 : 0, int(timestamp(field)), 1); it does not evaluate CEL",
			pol->rf_value.src);
		return why;
	}
	m->val_item = var == CEL_VAR_ITEM;
	if (m->shape != CEL_SHAPE_ONE && !m->val_item && pol->series_path[0]) {
		snprintf(
			why, len,
			"value: `%s` reads resource while seriesFrom.path is below it: write it over item",
			pol->rf_value.src);
		return why;
	}
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];
		struct cel_step s[MAX_SEGS];
		unsigned v;

		if (l->kind == TL_CONST)
			continue;
		if (cel__path(l->prog, &v, s, MAX_SEGS) < 0) {
			snprintf(
				why, len,
				"label %s: `%s`: CustomResourceState copies a field; it does not evaluate CEL",
				l->key, pol->labels[i].e.src);
			return why;
		}
		if (v == CEL_VAR_ITEM && !pol->series_path[0] &&
		    m->shape != CEL_SHAPE_ONE) {
			snprintf(
				why, len,
				"label %s: item is the object itself here: write it over resource",
				l->key);
			return why;
		}
	}
	return NULL;
}

static void put_labels(FILE *f, const struct tr_plan *p, unsigned want,
		       const char *indent, const char *what)
{
	bool any = false;

	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];
		struct cel_step s[MAX_SEGS];
		unsigned v;
		int n;
		char key[256];

		if (l->kind == TL_CONST)
			continue;
		n = cel__path(l->prog, &v, s, MAX_SEGS);
		if (n < 0 || !(v & want))
			continue;
		if (!any)
			fprintf(f, "%s%s:\n", indent, what);
		any = true;
		tr_prom__label(l->key, key, sizeof(key));
		fprintf(f, "%s  %s: ", indent, key);
		put_path(f, s, n);
		fputc('\n', f);
	}
}

static void put_metric(FILE *f, const struct ksm_metric *m)
{
	const struct tr_plan *p = m->p;
	const struct metric_policy *pol = p->pol;
	struct cel_step sp[MAX_SEGS];
	char spbuf[512];
	int nsp = series_path(pol->series_path, spbuf, sizeof(spbuf), sp,
			      MAX_SEGS);
	bool consts = pol->nstatic > 0;

	fprintf(f, "    - name: %s\n      help: ", m->name);
	put_yaml_str(f, p->def->description ? p->def->description : m->name);
	fputc('\n', f);
	for (size_t i = 0; i < p->nlabels; i++)
		consts |= p->labels[i].kind == TL_CONST && p->labels[i].value;
	if (consts) {
		fputs("      commonLabels:\n", f);
		for (size_t i = 0; i < p->nlabels; i++) {
			char key[256];

			if (p->labels[i].kind != TL_CONST ||
			    !p->labels[i].value)
				continue;
			tr_prom__label(p->labels[i].key, key, sizeof(key));
			fprintf(f, "        %s: ", key);
			put_yaml_str(f, p->labels[i].value);
			fputc('\n', f);
		}
	}
	if (m->shape == CEL_SHAPE_ONE) {
		/* Info: every label from where the series is (item) */
		fputs("      each:\n        type: Info\n        info:\n          path: ",
		      f);
		put_path(f, sp, nsp);
		fputc('\n', f);
		/* over the object itself item and resource are one */
		put_labels(f, p,
			   pol->series_path[0]
				   ? CEL_VAR_ITEM
				   : CEL_VAR_ITEM | CEL_VAR_RESOURCE,
			   "          ", "labelsFromPath");
		if (pol->series_path[0])
			put_labels(f, p, CEL_VAR_RESOURCE, "      ",
				   "labelsFromPath");
		return;
	}
	put_labels(f, p, CEL_VAR_RESOURCE, "      ", "labelsFromPath");
	fputs("      each:\n        type: Gauge\n        gauge:\n          path: ",
	      f);
	if (!pol->series_path[0]) {
		/* the object: the gauge sits on the value's field itself */
		put_path(f, m->val, m->nval);
		fputc('\n', f);
	} else {
		put_path(f, sp, nsp);
		fputc('\n', f);
		if (m->nval > 0) {
			fputs("          valueFrom: ", f);
			put_path(f, m->val, m->nval);
			fputc('\n', f);
		}
		put_labels(f, p, CEL_VAR_ITEM, "          ", "labelsFromPath");
	}
}

int tr_ksm__config(FILE *out, struct tr_plan *plans, size_t n,
		   const struct tr_opts *o, struct tr_report *rep)
{
	struct ksm_metric *ms = calloc(n + 1, sizeof(*ms));
	bool *done = calloc(n + 1, sizeof(*done));
	size_t k = 0;

	(void)o;
	if (!ms || !done) {
		free(ms);
		free(done);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		struct ksm_metric *m = &ms[k];
		struct mmetric_desc d = {
			.name = plans[i].def ? plans[i].def->name : "",
			.unit = plans[i].def ? plans[i].def->unit : NULL,
			.instrument = plans[i].def ? plans[i].def->instrument
						   : MI_GAUGE
		};
		char why[TR_REASON_MAX];
		const char *r = plans[i].reason[0] ? plans[i].reason : NULL;
		const char *api;

		m->p = &plans[i];
		if (!r)
			r = analyse(m, why, sizeof(why));
		if (r && plans[i].pol->type != MP_RESOURCE_FIELDS) {
			report__na(rep, plans[i].pol->obj_name, r);
			continue;
		}
		if (r) {
			report__add(rep, plans[i].pol->obj_name, false, "%s",
				    r);
			continue;
		}
		prom_names__metric(&d, m->name, sizeof(m->name));
		api = doc__str(plans[i].subjects[0].obj, "apiVersion");
		m->kind = doc__str(plans[i].subjects[0].obj, "kind");
		m->version = api && strchr(api, '/') ? strchr(api, '/') + 1
						     : api;
		m->group = plans[i].pol->subj_group;
		report__add(rep, plans[i].pol->obj_name, true,
			    "CustomResourceState metric %s on %s", m->name,
			    m->kind);
		k++;
	}
	fputs("# kube-state-metrics CustomResourceState configuration from milometer translate.\n"
	      "# kube-state-metrics adds customresource_group, _version and _kind to every\n"
	      "# series; the scrape job drops them:\n"
	      "#   metric_relabel_configs:\n"
	      "#   - {action: labeldrop, regex: customresource_(group|version|kind)}\n"
	      "kind: CustomResourceStateMetrics\nspec:\n",
	      out);
	fputs(k ? "  resources:\n" : "  resources: []\n", out);
	for (size_t i = 0; i < k; i++) {
		if (done[i])
			continue;
		fprintf(out,
			"  - groupVersionKind: {group: \"%s\", version: \"%s\", kind: \"%s\"}\n"
			"    metricNamePrefix: \"\"\n    metrics:\n",
			ms[i].group, ms[i].version, ms[i].kind);
		for (size_t j = i; j < k; j++) {
			if (done[j] || strcmp(ms[j].group, ms[i].group) ||
			    strcmp(ms[j].version, ms[i].version) ||
			    strcmp(ms[j].kind, ms[i].kind))
				continue;
			put_metric(out, &ms[j]);
			done[j] = true;
		}
	}
	free(ms);
	free(done);
	return 0;
}
