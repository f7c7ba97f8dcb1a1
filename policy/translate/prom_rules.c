// SPDX-License-Identifier: Apache-2.0
/*
 * The prometheus-rules target: one recording rule per target series family
 * (counter; histogram _bucket, _sum, _count), computing what the agent's
 * policy engine computes from the scraped source series:
 *
 *   sum without (<source labels>, milometer_translate_term) (
 *       <term of policy 1> or <term of policy 2> ...)
 *
 * A term selects each subject's series (attributeSelectors as exact
 * matchers, attributeFilters as regex matchers: PromQL anchors regexes,
 * milometer's filters match anywhere, hence ".*(?:RE).*"), sets the
 * subject's resource labels as constants, copies attribute labels with
 * label_replace, maps every histogram bound through a*le+b (the same
 * rescale the engine applies to the agent's own target, printed the same
 * way), and scales values: counters a*x (a cumulative total: f(T)-f(0)),
 * _sum a*sum+b*count, _count unchanged. The term label keeps two policies
 * feeding one target from hiding each other's series in `or` before the
 * sum adds them, as the engine adds them into one target series.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_names.h"
#include "exporter/prom_text.h"
#include "policy/translate/translate_impl.h"

#define TERM_LABEL "milometer_translate_term"

/* A PromQL string literal's body: \ " and newline escaped. */
static void put_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n') {
			fputs("\\n", f);
			continue;
		}
		fputc(*s, f);
	}
}

/* RE2 syntax: every metacharacter escaped, as a string literal's body. */
static void put_re_quoted(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\.+*?()|[]{}^$", *s))
			fputs("\\\\", f);
		if (*s == '"')
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* label_replace's replacement: $ is written $$. */
static void put_repl(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '$')
			fputc('$', f);
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		fputc(*s, f);
	}
}

static void put_num(FILE *f, double v)
{
	char b[40];

	prom_text__format_double(b, sizeof(b), v, PROM_FMT_TEXT);
	fputs(b, f);
}

void tr_prom__put_str(FILE *f, const char *s)
{
	put_str(f, s);
}

void tr_prom__put_re(FILE *f, const char *s)
{
	put_re_quoted(f, s);
}

const char *tr_prom__header(FILE *out, const struct tr_opts *o)
{
	if (!o->prometheusrule) {
		fputs("groups:\n", out);
		return "";
	}
	fprintf(out,
		"apiVersion: monitoring.coreos.com/v1\n"
		"kind: PrometheusRule\n"
		"metadata:\n"
		"  name: %s\n",
		o->object_name);
	if (o->object_namespace)
		fprintf(out, "  namespace: %s\n", o->object_namespace);
	fprintf(out, "  labels:\n"
		     "    app.kubernetes.io/managed-by: milometer\n"
		     "spec:\n"
		     "  groups:\n");
	return "  ";
}

int tr_prom__label(const char *key, char *out, size_t len)
{
	return prom_names__label(key, out, len) < 0 ? -ENOSPC : 0;
}

/* The derived attributes' pattern with subject values (or any) filled in. */
static void put_pattern(FILE *f, const struct tr_profile *prof,
			const char *const *vals)
{
	for (const char *p = prof->pattern; *p; p++) {
		if (*p == '%' && p[1] >= '1' && p[1] <= '9') {
			int g = p[1] - '0';

			if (vals[g])
				put_re_quoted(f, vals[g]);
			else
				fputs("[^/]+", f);
			p++;
			continue;
		}
		if (*p == '\\' || *p == '"')
			fputc('\\', f);
		fputc(*p, f);
	}
}

/* Matchers selecting one subject's series of a plan's source. */
static void put_matchers(FILE *f, const struct tr_plan *p,
			 const struct tr_subject *s,
			 const struct tr_profile *prof, const char *extra)
{
	const struct metric_policy *pol = p->pol;
	const char *derived[10] = { 0 };
	const char *from = NULL;
	bool first = true;

#define SEP() (first ? (first = false, "") : ", ")
	fputc('{', f);
	for (size_t i = 0; s && i < pol->nsels; i++) {
		const struct tr_attr *a = profile__attr(prof, pol->sels[i].key);

		if (a->from) {
			derived[a->group] = s->sels[i];
			from = a->from;
			continue;
		}
		fprintf(f, "%s%s=\"", SEP(), a->label);
		put_str(f, s->sels[i]);
		fputc('"', f);
	}
	if (from) {
		fprintf(f, "%s%s=~\"", SEP(), from);
		put_pattern(f, prof, derived);
		fputc('"', f);
	}
	for (size_t i = 0; i < pol->nfilters; i++) {
		const struct mp_filter *mf = &pol->filters[i];
		const struct tr_attr *a = profile__attr(prof, mf->key);

		/* the engine needs the attribute present, even for "" */
		fprintf(f, "%s%s!=\"\"", SEP(), a->label);
		if (mf->prefix) {
			fprintf(f, ", %s=~\"", a->label);
			put_re_quoted(f, mf->prefix);
			fputs(".*\"", f);
		} else {
			fprintf(f, ", %s=~\".*(?:", a->label);
			put_str(f, mf->re_src);
			fputs(").*\"", f);
		}
	}
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_attr *a;

		if (p->labels[i].kind != TL_ATTR || !p->labels[i].required)
			continue;
		a = profile__attr(prof, p->labels[i].attr);
		if (a && !a->from)
			fprintf(f, "%s%s!=\"\"", SEP(), a->label);
	}
	if (extra)
		fprintf(f, "%s%s", SEP(), extra);
	fputc('}', f);
#undef SEP
}

enum part { PART_TOTAL, PART_BUCKET, PART_SUM, PART_COUNT };

static const char *const part_suffix[] = { "", "_bucket", "_sum", "_count" };

/*
 * LABELS(OR over subjects of CONSTS_s(src{matchers_s})) for one source
 * series family (name with suffix).
 */
static void put_selected(FILE *f, const struct tr_plan *p,
			 const struct tr_profile *prof, const char *series,
			 const char *extra)
{
	/* attribute copies (and derivations) wrap the subjects' union */
	for (size_t i = 0; i < p->nlabels; i++)
		if ((p->labels[i].kind == TL_ATTR &&
		     profile__attr(prof, p->labels[i].attr)) ||
		    p->labels[i].kind == TL_CONST)
			fputs("label_replace(", f);
	for (size_t i = 0; i < prof->nattrs; i++)
		if (prof->attrs[i].from)
			fputs("label_replace(", f);
	fputs("\n", f);
	for (size_t s = 0; s < p->nsubjects; s++) {
		const struct tr_subject *sj = &p->subjects[s];
		size_t n = 0;

		fputs(s ? "  or " : "     ", f);
		for (size_t i = 0; i < p->nlabels; i++)
			if (p->labels[i].kind == TL_RESOURCE && sj->values[i])
				fputs("label_replace(", f), n++;
		fputs(series, f);
		put_matchers(f, p, sj, prof, extra);
		for (size_t i = 0; i < p->nlabels; i++) {
			char key[256];

			if (p->labels[i].kind != TL_RESOURCE || !sj->values[i])
				continue;
			tr_prom__label(p->labels[i].key, key, sizeof(key));
			fprintf(f, ", \"%s\", \"", key);
			put_repl(f, sj->values[i]);
			fputs("\", \"\", \"\")", f);
		}
		fputc('\n', f);
	}
	for (size_t i = 0; i < prof->nattrs; i++) {
		const struct tr_attr *a = &prof->attrs[i];

		if (!a->from)
			continue;
		/* capture every group, keep the attribute's */
		fprintf(f, ", \"%s\", \"$%d\", \"%s\", \"", a->label, a->group,
			a->from);
		for (const char *q = prof->pattern; *q; q++) {
			if (*q == '%' && q[1] >= '1' && q[1] <= '9') {
				fputs("([^/]+)", f);
				q++;
				continue;
			}
			if (*q == '\\' || *q == '"')
				fputc('\\', f);
			fputc(*q, f);
		}
		fputs("\")", f);
	}
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];
		char key[256];

		if (l->kind != TL_ATTR && l->kind != TL_CONST)
			continue;
		/* an optional attribute the profile lacks: left out */
		if (l->kind == TL_ATTR && !profile__attr(prof, l->attr))
			continue;
		tr_prom__label(l->key, key, sizeof(key));
		if (l->kind == TL_CONST) {
			fprintf(f, ", \"%s\", \"", key);
			put_repl(f, l->value ? l->value : "");
			fputs("\", \"\", \"\")", f);
		} else {
			fprintf(f, ", \"%s\", \"$1\", \"%s\", \"(.*)\")", key,
				profile__attr(prof, l->attr)->label);
		}
	}
}

/* Map each source `le` to the target bound through a temporary "t:" form,
 * so a target bound equal to a later source bound is not mapped twice. */
static void put_le_map(FILE *f, const struct tr_plan *p,
		       const struct tr_opts *o, void (*inner)(FILE *, void *),
		       void *ctx)
{
	const struct source_metric *src = p->src;

	fputs("label_replace(", f);
	for (size_t i = 0; i < src->nbounds; i++)
		for (int fmt = 0; fmt < 2; fmt++)
			fputs("label_replace(", f);
	inner(f, ctx);
	for (size_t i = 0; i < src->nbounds; i++) {
		double t = p->a * src->bounds[i] + p->b;
		char sle[2][40], tle[40];

		profile__le(o->profile, src->bounds[i], PROM_FMT_TEXT, sle[0],
			    sizeof(sle[0]));
		profile__le(o->profile, src->bounds[i], PROM_FMT_OPENMETRICS,
			    sle[1], sizeof(sle[1]));
		for (int fmt = 0; fmt < 2; fmt++) {
			/*
			 * A source form both formats share maps to the
			 * format the scrape is told to use (--le-format).
			 */
			enum prom_format tf = strcmp(sle[0], sle[1])
						      ? (enum prom_format)fmt
						      : o->le_format;

			prom_text__format_double(tle, sizeof(tle), t, tf);
			if (fmt == 1 && !strcmp(sle[0], sle[1])) {
				/* keep the parenthesis count: identity */
				fputs(", \"le\", \"$1\", \"le\", \"(t:.*)\")",
				      f);
				continue;
			}
			fprintf(f, ", \"le\", \"t:%s\", \"le\", \"", tle);
			put_re_quoted(f, sle[fmt]);
			fputs("\")", f);
		}
	}
	fputs(", \"le\", \"$1\", \"le\", \"t:(.*)\")", f);
}

struct sel_ctx {
	const struct tr_plan *p;
	const struct tr_profile *prof;
	const char *series;
};

static void sel_inner(FILE *f, void *ctx)
{
	struct sel_ctx *c = ctx;

	put_selected(f, c->p, c->prof, c->series, NULL);
}

static void put_term(FILE *f, const struct tr_plan *p, size_t term,
		     enum part part, const struct tr_opts *o)
{
	const struct tr_profile *prof = o->profile;
	char fam[512], series[600];
	bool hist_src = p->src->instrument == MI_HISTOGRAM;

	profile__family(p->src, fam, sizeof(fam));
	fprintf(f, "label_replace(");
	switch (part) {
	case PART_BUCKET: {
		struct sel_ctx c = { p, prof, series };

		snprintf(series, sizeof(series), "%s_bucket", fam);
		put_le_map(f, p, o, sel_inner, &c);
		break;
	}
	case PART_COUNT:
		snprintf(series, sizeof(series), "%s_count", fam);
		put_selected(f, p, prof, series, NULL);
		break;
	case PART_SUM:
	case PART_TOTAL:
		/*
		 * histogram sum: sum(a*v+b) = a*sum + b*count; a counter fed
		 * from a histogram adds the transformed latencies the same
		 * way (b only when the selector says delta: one b per request)
		 */
		snprintf(series, sizeof(series), "%s%s", fam,
			 hist_src ? "_sum" : "");
		fputs("(", f);
		if (p->a != 1) {
			put_num(f, p->a);
			fputs(" * ", f);
		}
		put_selected(f, p, prof, series, NULL);
		fputs(")", f);
		if (hist_src && p->b != 0 &&
		    (part == PART_SUM || p->pol->src_temporality == MT_DELTA)) {
			snprintf(series, sizeof(series), "%s_count", fam);
			fputs(" + (", f);
			put_num(f, p->b);
			fputs(" * ", f);
			put_selected(f, p, prof, series, NULL);
			fputs(")", f);
		}
		break;
	}
	fprintf(f, ", \"%s\", \"%zu\", \"\", \"\")", TERM_LABEL, term);
}

/* Source labels the sum drops: every profile label no target label keeps. */
static void put_without(FILE *f, const struct tr_plan *const *ps, size_t n,
			const struct tr_profile *prof)
{
	fputs("sum without (", f);
	for (size_t i = 0; i < prof->nattrs; i++) {
		bool kept = false;

		for (size_t j = 0; j < n && !kept; j++)
			for (size_t k = 0; k < ps[j]->nlabels && !kept; k++) {
				char key[256];

				tr_prom__label(ps[j]->labels[k].key, key,
					       sizeof(key));
				kept = !strcmp(key, prof->attrs[i].label);
			}
		if (!kept)
			fprintf(f, "%s, ", prof->attrs[i].label);
	}
	fputs(TERM_LABEL ") (\n", f);
}

/* Indent every line of a memstream buffer for a YAML block scalar. */
static void put_block(FILE *out, const char *text, const char *indent)
{
	const char *p = text;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);

		if (len)
			fprintf(out, "%s%.*s\n", indent, (int)len, p);
		p += len + (nl ? 1 : 0);
	}
}

static int put_rule(FILE *out, const char *record,
		    const struct tr_plan *const *ps, size_t n, enum part part,
		    const struct tr_opts *o, const char *indent)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	put_without(f, ps, n, o->profile);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputs("\nor\n", f);
		put_term(f, ps[i], i, part, o);
	}
	fputs("\n)\n", f);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	fprintf(out, "%s- record: %s%s\n%s  expr: |\n", indent, record,
		part_suffix[part], indent);
	{
		char ind[64];

		snprintf(ind, sizeof(ind), "%s    ", indent);
		put_block(out, buf, ind);
	}
	free(buf);
	return 0;
}

/*
 * Why the prometheus-rules target refuses a plan that the shared analysis
 * accepted, or NULL.
 */
static const char *refuse(const struct tr_plan *p, const struct tr_opts *o,
			  char *buf, size_t len)
{
	const char *r;

	if (p->pol->type != MP_DATA_PLANE)
		return "a ResourceFields policy reads API objects, not scraped series: use --target kube-state-metrics";
	if (p->reason[0])
		return p->reason;
	if ((r = profile__refuse(o->profile, p->src)))
		return r;
	for (size_t i = 0; i < p->pol->nsels; i++)
		if (!profile__attr(o->profile, p->pol->sels[i].key)) {
			snprintf(
				buf, len,
				"attributeSelectors: %s is not an attribute of %s in the %s profile",
				p->pol->sels[i].key, p->pol->src_metric,
				o->profile->name);
			return buf;
		}
	for (size_t i = 0; i < p->pol->nfilters; i++) {
		const struct tr_attr *a =
			profile__attr(o->profile, p->pol->filters[i].key);

		if (!a || a->from) {
			snprintf(
				buf, len,
				"attributeFilters: %s is not a label of %s in the %s profile",
				p->pol->filters[i].key, p->pol->src_metric,
				o->profile->name);
			return buf;
		}
	}
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];
		char key[256];

		tr_prom__label(l->key, key, sizeof(key));
		for (size_t k = 0; k < o->profile->nattrs; k++)
			if (!strcmp(key, o->profile->attrs[k].label) &&
			    !(l->kind == TL_ATTR &&
			      !strcmp(l->attr, o->profile->attrs[k].attr))) {
				snprintf(
					buf, len,
					"label %s: its Prometheus name %s is also a source label; rename the target label",
					l->key, key);
				return buf;
			}
		if (l->kind == TL_ATTR && !profile__attr(o->profile, l->attr)) {
			if (!l->required)
				continue; /* absent there: left out, as the engine does */
			snprintf(
				buf, len,
				"label %s: attribute %s is not on %s in the %s profile and the definition requires the label",
				l->key, l->attr, p->pol->src_metric,
				o->profile->name);
			return buf;
		}
	}
	return NULL;
}

int tr_prom__rules(FILE *out, struct tr_plan *plans, size_t n,
		   const struct tr_opts *o, struct tr_report *rep)
{
	const struct tr_plan **group = calloc(n + 1, sizeof(*group));
	bool *done = calloc(n + 1, sizeof(*done));
	const char *ind;
	int err = 0;

	if (!group || !done) {
		free(group);
		free(done);
		return -ENOMEM;
	}
	ind = tr_prom__header(out, o);
	for (size_t i = 0; i < n; i++) {
		char why[TR_REASON_MAX];
		const char *r = refuse(&plans[i], o, why, sizeof(why));

		if (plans[i].pol->type != MP_DATA_PLANE) {
			report__na(rep, plans[i].pol->obj_name, r);
			done[i] = true;
		} else if (r) {
			report__add(rep, plans[i].pol->obj_name, false, "%s",
				    r);
			done[i] = true;
		} else if (!plans[i].nsubjects) {
			report__add(
				rep, plans[i].pol->obj_name, true,
				"no subject objects yet: no rule until one exists");
			done[i] = true;
		}
	}
	for (size_t i = 0; i < n && !err; i++) {
		struct mmetric_desc d;
		char fam[512];
		size_t k = 0;

		if (done[i])
			continue;
		for (size_t j = i; j < n; j++)
			if (!done[j] &&
			    !strcmp(plans[j].def->name, plans[i].def->name)) {
				group[k++] = &plans[j];
				done[j] = true;
			}
		d = (struct mmetric_desc){ .name = plans[i].def->name,
					   .unit = plans[i].def->unit,
					   .instrument =
						   plans[i].def->instrument };
		if (prom_names__metric(&d, fam, sizeof(fam)) < 0) {
			err = -ENOSPC;
			break;
		}
		fprintf(out, "%s- name: milometer/%s\n%s  rules:\n", ind,
			plans[i].def->name, ind);
		{
			char rind[16];

			snprintf(rind, sizeof(rind), "%s  ", ind);
			if (d.instrument == MI_HISTOGRAM) {
				err = put_rule(out, fam, group, k, PART_BUCKET,
					       o, rind);
				if (!err)
					err = put_rule(out, fam, group, k,
						       PART_SUM, o, rind);
				if (!err)
					err = put_rule(out, fam, group, k,
						       PART_COUNT, o, rind);
			} else {
				err = put_rule(out, fam, group, k, PART_TOTAL,
					       o, rind);
			}
		}
		for (size_t j = 0; j < k; j++)
			report__add(rep, group[j]->pol->obj_name, true,
				    "recording rules %s (%zu subjects)", fam,
				    group[j]->nsubjects);
	}
	free(group);
	free(done);
	return err;
}
