// SPDX-License-Identifier: Apache-2.0
/*
 * The otelcol target: an OpenTelemetry Collector (contrib >= 0.161)
 * configuration that computes each DataPlane policy's target metric from
 * the source metrics as the agent pushes them over OTLP (OTel names and
 * attributes, envoy.cluster.upstream_rq_time / k8s.httproute.name):
 *
 *   transform/milometer-select  copy_metric(target) of the source; on its
 *       points: mark the subject's points (attributeSelectors as ==,
 *       attributeFilters with IsMatch, which matches anywhere as milometer
 *       does), set its resource labels, copy attribute labels, keep only
 *       the target's keys (and the mark)
 *   filter/milometer            drop the points no subject selected
 *   transform/milometer-finish  drop the mark, merge the points keep_keys
 *       made identical (aggregate_on_attributes "sum", as the engine adds
 *       them into one series), integer sums as doubles (the agent's
 *       targets are double), scale_metric(a): a histogram's bounds, sum,
 *       min and max scale with it, the same rescale the engine applies
 *   cumulativetodelta/milometer for targets whose definition says delta
 *
 * Refused: b != 0 (no OTTL function shifts bounds), a <= 0 on histograms,
 * counters fed by histograms, two policies feeding one target (two copies
 * would not merge into one metric), and whatever plan.c refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_text.h"
#include "policy/translate/translate_impl.h"

#define MARK "milometer.subject"

/* An OTTL string literal inside a YAML single-quoted scalar. */
static void put_ottl_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		if (*s == '\'')
			fputc('\'', f); /* YAML: '' inside '...' */
		fputc(*s, f);
	}
	fputc('"', f);
}

/* RE2 metacharacters escaped (an OTTL prefix match). */
static void put_ottl_prefix_re(FILE *f, const char *s)
{
	fputs("\"^", f);
	for (; *s; s++) {
		if (strchr("\\.+*?()|[]{}^$", *s))
			fputs("\\\\", f);
		else if (*s == '"')
			fputc('\\', f);
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void put_attr(FILE *f, const char *key)
{
	fputs("datapoint.attributes[", f);
	put_ottl_str(f, key);
	fputc(']', f);
}

/* An OTTL float literal: the shortest round-trip digits, always a '.'. */
static void put_num(FILE *f, double v)
{
	char b[40];
	char *e;

	prom_text__format_double(b, sizeof(b), v, PROM_FMT_TEXT);
	e = strchr(b, 'e');
	if (strchr(b, '.'))
		fputs(b, f);
	else if (e)
		fprintf(f, "%.*s.0%s", (int)(e - b), b, e);
	else
		fprintf(f, "%s.0", b);
}

/* Conditions every selected point meets: filters, required attributes. */
static void put_common_cond(FILE *f, const struct tr_plan *p)
{
	const struct metric_policy *pol = p->pol;

	for (size_t i = 0; i < pol->nfilters; i++) {
		const struct mp_filter *mf = &pol->filters[i];

		fputs(" and ", f);
		put_attr(f, mf->key);
		fputs(" != nil and IsMatch(", f);
		put_attr(f, mf->key);
		fputs(", ", f);
		if (mf->prefix)
			put_ottl_prefix_re(f, mf->prefix);
		else
			put_ottl_str(f, mf->re_src);
		fputc(')', f);
	}
	for (size_t i = 0; i < p->nlabels; i++)
		if (p->labels[i].kind == TL_ATTR && p->labels[i].required) {
			fputs(" and ", f);
			put_attr(f, p->labels[i].attr);
			fputs(" != nil", f);
		}
}

static void put_subject_cond(FILE *f, const struct tr_plan *p,
			     const struct tr_subject *s)
{
	fputs(" where metric.name == ", f);
	put_ottl_str(f, p->pol->target);
	for (size_t i = 0; i < p->pol->nsels; i++) {
		fputs(" and ", f);
		put_attr(f, p->pol->sels[i].key);
		fputs(" == ", f);
		put_ottl_str(f, s->sels[i]);
	}
	put_common_cond(f, p);
}

static const char *refuse(const struct tr_plan *p, const struct tr_plan *all,
			  size_t n, char *buf, size_t len)
{
	if (p->pol->type != MP_DATA_PLANE)
		return "a ResourceFields policy reads API objects, not data-plane samples: use --target kube-state-metrics";
	if (p->reason[0])
		return p->reason;
	if (p->src->instrument != p->def->instrument) {
		snprintf(
			buf, len,
			"a %s target fed by the %s %s: the Collector has no OTTL function that turns one into the other exactly",
			crd_definition__instrument_name(p->def->instrument),
			p->src->instrument == MI_HISTOGRAM ? "histogram"
							   : "counter",
			p->pol->src_metric);
		return buf;
	}
	if (p->b != 0 && p->def->instrument == MI_HISTOGRAM) {
		snprintf(
			buf, len,
			"value: `%s` adds %g: scale_metric only multiplies; no OTTL function shifts a histogram's bounds",
			p->pol->value.src, p->b);
		return buf;
	}
	for (size_t i = 0; i < n; i++)
		if (&all[i] != p && all[i].pol->type == MP_DATA_PLANE &&
		    !strcmp(all[i].pol->target, p->pol->target)) {
			snprintf(
				buf, len,
				"policy %s feeds %s too: two copies of source metrics do not merge into one metric in the Collector",
				all[i].pol->obj_name, p->pol->target);
			return buf;
		}
	for (size_t i = 0; i < p->nlabels; i++)
		if (source_catalogue__carries(p->src, p->labels[i].key) &&
		    !(p->labels[i].kind == TL_ATTR &&
		      !strcmp(p->labels[i].attr, p->labels[i].key))) {
			snprintf(
				buf, len,
				"label %s: also a source attribute; rename the target label",
				p->labels[i].key);
			return buf;
		}
	return NULL;
}

static void put_select(FILE *f, const struct tr_plan *p)
{
	const struct metric_policy *pol = p->pol;

	fputs("    - context: metric\n      statements:\n      - 'copy_metric(name=",
	      f);
	put_ottl_str(f, pol->target);
	fputs(", description=", f);
	put_ottl_str(f, p->def->description ? p->def->description : "");
	fputs(", unit=", f);
	put_ottl_str(f, p->def->unit ? p->def->unit : "");
	fputs(") where metric.name == ", f);
	put_ottl_str(f, pol->src_metric);
	fputs("'\n    - context: datapoint\n      statements:\n", f);
	for (size_t s = 0; s < p->nsubjects; s++) {
		const struct tr_subject *sj = &p->subjects[s];

		fputs("      - 'set(", f);
		put_attr(f, MARK);
		fputs(", \"1\")", f);
		put_subject_cond(f, p, sj);
		fputs("'\n", f);
		for (size_t i = 0; i < p->nlabels; i++) {
			if (p->labels[i].kind != TL_RESOURCE || !sj->values[i])
				continue;
			fputs("      - 'set(", f);
			put_attr(f, p->labels[i].key);
			fputs(", ", f);
			put_ottl_str(f, sj->values[i]);
			fputc(')', f);
			put_subject_cond(f, p, sj);
			fputs("'\n", f);
		}
	}
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];

		if (l->kind == TL_CONST && l->value) {
			fputs("      - 'set(", f);
			put_attr(f, l->key);
			fputs(", ", f);
			put_ottl_str(f, l->value);
			fputs(") where metric.name == ", f);
			put_ottl_str(f, pol->target);
			fputs("'\n", f);
		} else if (l->kind == TL_ATTR) {
			fputs("      - 'set(", f);
			put_attr(f, l->key);
			fputs(", ", f);
			put_attr(f, l->attr);
			fputs(") where metric.name == ", f);
			put_ottl_str(f, pol->target);
			fputs(" and ", f);
			put_attr(f, l->attr);
			fputs(" != nil'\n", f);
		}
	}
	fputs("      - 'keep_keys(datapoint.attributes, [", f);
	for (size_t i = 0; i < p->nlabels; i++) {
		put_ottl_str(f, p->labels[i].key);
		fputs(", ", f);
	}
	put_ottl_str(f, MARK);
	fputs("]) where metric.name == ", f);
	put_ottl_str(f, pol->target);
	fputs("'\n", f);
}

static void put_finish(FILE *f, const struct tr_plan *p)
{
	const char *t = p->pol->target;

	fputs("    - context: datapoint\n      statements:\n      - 'delete_key(datapoint.attributes, ",
	      f);
	put_ottl_str(f, MARK);
	fputs(") where metric.name == ", f);
	put_ottl_str(f, t);
	fputs("'\n", f);
	if (p->def->instrument != MI_HISTOGRAM) {
		/* the agent's targets carry double points */
		fputs("      - 'set(datapoint.value_double, Double(datapoint.value_int)) where metric.name == ",
		      f);
		put_ottl_str(f, t);
		fputs(" and datapoint.value_int != nil'\n", f);
	}
	fputs("    - context: metric\n      statements:\n      - 'aggregate_on_attributes(\"sum\") where metric.name == ",
	      f);
	put_ottl_str(f, t);
	fputs("'\n", f);
	if (p->a != 1) {
		fputs("      - 'scale_metric(", f);
		put_num(f, p->a);
		fputs(") where metric.name == ", f);
		put_ottl_str(f, t);
		fputs("'\n", f);
	}
}

int tr_otel__config(FILE *out, struct tr_plan *plans, size_t n,
		    const struct tr_opts *o, struct tr_report *rep)
{
	bool *ok = calloc(n + 1, sizeof(*ok));
	size_t k = 0, ndelta = 0;

	if (!ok)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char why[TR_REASON_MAX];
		const char *r =
			o->profile->envoy_le
				? "the otelcol target reads sources as the agent pushes them over OTLP; for a scraped Envoy use --target prometheus-rules --source-profile envoy"
				: refuse(&plans[i], plans, n, why, sizeof(why));

		if (plans[i].pol->type != MP_DATA_PLANE) {
			report__na(
				rep, plans[i].pol->obj_name,
				"a ResourceFields policy reads API objects, not data-plane samples: use --target kube-state-metrics");
		} else if (r) {
			report__add(rep, plans[i].pol->obj_name, false, "%s",
				    r);
		} else if (!plans[i].nsubjects) {
			report__add(
				rep, plans[i].pol->obj_name, true,
				"no subject objects yet: no statements until one exists");
		} else {
			ok[i] = true;
			k++;
			ndelta += plans[i].def->instrument != MI_GAUGE &&
				  plans[i].def->temporality == MT_DELTA;
			report__add(
				rep, plans[i].pol->obj_name, true,
				"transform statements for %s (%zu subjects)",
				plans[i].pol->target, plans[i].nsubjects);
		}
	}
	fprintf(out,
		"# OpenTelemetry Collector configuration from milometer translate\n"
		"# (collector-contrib >= 0.161: transform, filter, cumulativetodelta).\n"
		"# The sources arrive as the agent pushes them over OTLP; the targets\n"
		"# leave by OTLP/HTTP. Edit the endpoints to your deployment.\n"
		"receivers:\n  otlp:\n    protocols:\n      http:\n        endpoint: \"%s\"\n"
		"exporters:\n  otlphttp:\n    endpoint: \"%s\"\n"
		"processors:\n",
		o->otel_receiver, o->otel_exporter);
	fputs("  transform/milometer-select:\n    error_mode: propagate\n    metric_statements:\n",
	      out);
	if (!k)
		fputs("    - context: metric\n      statements: []\n", out);
	for (size_t i = 0; i < n; i++)
		if (ok[i])
			put_select(out, &plans[i]);
	fputs("  filter/milometer:\n    error_mode: propagate\n    metrics:\n      datapoint:\n",
	      out);
	if (!k)
		fputs("      - 'false'\n", out);
	for (size_t i = 0; i < n; i++)
		if (ok[i]) {
			fputs("      - 'metric.name == ", out);
			put_ottl_str(out, plans[i].pol->target);
			fputs(" and ", out);
			put_attr(out, MARK);
			fputs(" == nil'\n", out);
		}
	fputs("  transform/milometer-finish:\n    error_mode: propagate\n    metric_statements:\n",
	      out);
	if (!k)
		fputs("    - context: metric\n      statements: []\n", out);
	for (size_t i = 0; i < n; i++)
		if (ok[i])
			put_finish(out, &plans[i]);
	if (ndelta) {
		fputs("  cumulativetodelta/milometer:\n    include:\n      match_type: strict\n      metrics:\n",
		      out);
		for (size_t i = 0; i < n; i++)
			if (ok[i] && plans[i].def->instrument != MI_GAUGE &&
			    plans[i].def->temporality == MT_DELTA) {
				fputs("      - ", out);
				put_ottl_str(out, plans[i].pol->target);
				fputc('\n', out);
			}
	}
	fprintf(out,
		"service:\n  pipelines:\n    metrics/milometer:\n"
		"      receivers: [otlp]\n"
		"      processors: [transform/milometer-select, filter/milometer, transform/milometer-finish%s]\n"
		"      exporters: [otlphttp]\n",
		ndelta ? ", cumulativetodelta/milometer" : "");
	free(ok);
	return 0;
}
