// SPDX-License-Identifier: Apache-2.0
/*
 * The prometheus-relabel target: a scrape job's metric_relabel_configs that
 * turn each source series into its target series in place (the seed's
 * "Prometheus-compatible path (name/label transforms only)"), for the
 * policies that are pure relabelling:
 *
 *  - the value is the source's (value, no scale, no offset) and the target
 *    has the source's instrument (a histogram keeps its bounds);
 *  - no two source series become one target series: every source label is
 *    copied to a target label, or is a selector whose subjects get
 *    distinct labels (status_code_class follows status_code). The engine
 *    adds series that end up with equal labels; relabelling cannot;
 *  - one policy per source and per target in the job.
 *
 * Per policy, in order: mark the series of each subject (selector values,
 * exact) and set its resource labels; advance the mark through every
 * filter and required attribute (one step each, so a regex never spans two
 * labels); drop the source's unmarked series; copy attributes to target
 * labels, clear the other source labels, rename; drop the marks. A series
 * of another metric is never touched. Everything else is NotTranslatable
 * here, with the reason: --target prometheus-rules computes it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_names.h"
#include "policy/translate/translate_impl.h"

#define MARK "__tmp_milometer"
#define OK   "__tmp_milometer_ok"

/* A YAML single-quoted scalar. */
static void put_sq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

/* s as an RE2 literal, appended to a memstream. */
static void put_lit(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (strchr("\\.+*?()|[]{}^$", *s))
			fputc('\\', f);
		fputc(*s, f);
	}
}

/* A relabel replacement: $ written $$. */
static void put_repl_sq(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s; s++) {
		if (*s == '$')
			fputc('$', f);
		if (*s == '\'')
			fputc('\'', f);
		fputc(*s, f);
	}
	fputc('\'', f);
}

static bool label_kept(const struct tr_plan *p, const char *attr)
{
	for (size_t i = 0; i < p->nlabels; i++)
		if (p->labels[i].kind == TL_ATTR &&
		    !strcmp(p->labels[i].attr, attr))
			return true;
	return false;
}

static bool is_selector(const struct tr_plan *p, const char *attr)
{
	for (size_t i = 0; i < p->pol->nsels; i++)
		if (!strcmp(p->pol->sels[i].key, attr))
			return true;
	return false;
}

/* Do subjects i and j get the same resource and constant labels? */
static bool same_labels(const struct tr_plan *p, size_t i, size_t j)
{
	for (size_t k = 0; k < p->nlabels; k++) {
		const char *a = p->subjects[i].values[k];
		const char *b = p->subjects[j].values[k];

		if (p->labels[k].kind != TL_RESOURCE)
			continue;
		if (!a != !b || (a && strcmp(a, b)))
			return false;
	}
	return true;
}

static const char *refuse(const struct tr_plan *p, const struct tr_opts *o,
			  char *buf, size_t len)
{
	const struct tr_profile *prof = o->profile;

	if (p->reason[0])
		return p->reason;
	if (prof->pattern)
		return "the envoy profile derives the route from envoy_cluster_name with a pattern: relabelling is generated for the milometer profile only; use --target prometheus-rules";
	if (p->a != 1 || p->b != 0) {
		snprintf(
			buf, len,
			"value: the transform changes the values (%g * value + %g); relabelling only renames: use --target prometheus-rules",
			p->a, p->b);
		return buf;
	}
	if (p->def->instrument != p->src->instrument)
		return "the target's instrument differs from the source's: relabelling only renames; use --target prometheus-rules";
	if (!p->pol->nsels)
		return "no attributeSelectors: every subject would take every series; relabelling needs one subject per series";
	for (size_t s = 0; s < p->nsubjects; s++)
		for (size_t i = 0; i < p->pol->nsels; i++)
			if (strchr(p->subjects[s].sels[i], ';')) {
				snprintf(
					buf, len,
					"attributeSelectors: the value \"%s\" holds ';', the separator relabelling joins labels with",
					p->subjects[s].sels[i]);
				return buf;
			}
	for (size_t i = 0; i < p->nlabels; i++) {
		const struct tr_label *l = &p->labels[i];
		char key[256];

		tr_prom__label(l->key, key, sizeof(key));
		if (!strncmp(key, "__", 2)) {
			snprintf(
				buf, len,
				"label %s: a name starting with __ is Prometheus' own",
				l->key);
			return buf;
		}
		for (size_t k = 0; k < prof->nattrs; k++)
			if (!strcmp(key, prof->attrs[k].label) &&
			    !(l->kind == TL_ATTR &&
			      !strcmp(l->attr, prof->attrs[k].attr))) {
				snprintf(
					buf, len,
					"label %s: its Prometheus name %s is also a source label; rename the target label",
					l->key, key);
				return buf;
			}
		if (l->kind == TL_ATTR && !profile__attr(prof, l->attr) &&
		    l->required) {
			snprintf(
				buf, len,
				"label %s: attribute %s is not on %s in the %s profile and the definition requires the label",
				l->key, l->attr, p->pol->src_metric,
				prof->name);
			return buf;
		}
	}
	for (const char *const *a = p->src->attrs; *a; a++) {
		const struct tr_attr *ta = profile__attr(prof, *a);

		if (!ta || label_kept(p, *a))
			continue;
		if (!strcmp(*a, SRC_ATTR_STATUS_CLASS) &&
		    label_kept(p, SRC_ATTR_STATUS))
			continue;
		if (is_selector(p, *a)) {
			bool distinct = true;

			for (size_t i = 0; i < p->nsubjects && distinct; i++)
				for (size_t j = i + 1;
				     j < p->nsubjects && distinct; j++)
					distinct = !same_labels(p, i, j);
			if (distinct)
				continue;
			snprintf(
				buf, len,
				"two subjects get the same target labels: the engine adds their series, relabelling cannot; use --target prometheus-rules");
			return buf;
		}
		snprintf(
			buf, len,
			"attribute %s (label %s) is not kept: the engine adds the series that differ only in it, relabelling cannot; use --target prometheus-rules",
			*a, ta->label);
		return buf;
	}
	return NULL;
}

/* The source series' names as a regex (a histogram's three families). */
static void src_re(FILE *f, const struct tr_plan *p)
{
	char fam[512];

	profile__family(p->src, fam, sizeof(fam));
	put_lit(f, fam);
	if (p->src->instrument == MI_HISTOGRAM)
		fputs("(?:_bucket|_sum|_count)", f);
}

/* One rule; regex and replacement are already quoted (or NULL). */
static void rule(FILE *out, const char *srcl, const char *re,
		 const char *target, const char *repl, const char *action)
{
	fprintf(out, "  - source_labels: [%s]\n", srcl);
	fputs("    regex: ", out);
	put_sq(out, re);
	fputc('\n', out);
	if (action)
		fprintf(out, "    action: %s\n", action);
	if (target)
		fprintf(out, "    target_label: %s\n    replacement: %s\n",
			target, repl);
}

/* Build a string in a memstream and hand it back (caller frees). */
#define MEM(var, body)                                                         \
	do {                                                                   \
		size_t _l = 0;                                                 \
		FILE *_f = open_memstream(&(var), &_l);                        \
		if (!_f)                                                       \
			return -ENOMEM;                                        \
		body;                                                          \
		if (fclose(_f))                                                \
			return -ENOMEM;                                        \
	} while (0)

static int put_policy(FILE *out, const struct tr_plan *p, size_t pi,
		      const struct tr_opts *o)
{
	const struct tr_profile *prof = o->profile;
	struct mmetric_desc d = { .name = p->def->name,
				  .unit = p->def->unit,
				  .instrument = p->def->instrument };
	char tfam[512], srcl[1024] = "__name__", mark[64], next[64], *s;
	size_t step = 0;

	if (prom_names__metric(&d, tfam, sizeof(tfam)) < 0)
		return -ENOSPC;
	fprintf(out, "  # %s: %s -> %s\n", p->pol->obj_name, p->pol->src_metric,
		p->def->name);
	for (size_t i = 0; i < p->pol->nsels; i++)
		snprintf(srcl + strlen(srcl), sizeof(srcl) - strlen(srcl),
			 ", %s",
			 profile__attr(prof, p->pol->sels[i].key)->label);
	snprintf(mark, sizeof(mark), "p%zuc0", pi);
	for (size_t sj = 0; sj < p->nsubjects; sj++) {
		const struct tr_subject *su = &p->subjects[sj];
		char *re = NULL;

		MEM(re, {
			src_re(_f, p);
			for (size_t i = 0; i < p->pol->nsels; i++) {
				fputc(';', _f);
				put_lit(_f, su->sels[i]);
			}
		});
		rule(out, srcl, re, MARK, mark, NULL);
		for (size_t k = 0; k < p->nlabels; k++) {
			char key[256];

			if (p->labels[k].kind != TL_RESOURCE || !su->values[k])
				continue;
			tr_prom__label(p->labels[k].key, key, sizeof(key));
			MEM(s, put_repl_sq(_f, su->values[k]));
			rule(out, srcl, re, key, s, NULL);
			free(s);
		}
		free(re);
	}
	/* filters and required attributes: one step each along the mark */
	for (size_t i = 0; i < p->pol->nfilters + p->nlabels; i++) {
		const struct mp_filter *mf =
			i < p->pol->nfilters ? &p->pol->filters[i] : NULL;
		const struct tr_label *l =
			mf ? NULL : &p->labels[i - p->pol->nfilters];
		const struct tr_attr *a;
		char sl[600];
		char *re = NULL;

		if (!mf && (l->kind != TL_ATTR || !l->required))
			continue;
		a = profile__attr(prof, mf ? mf->key : l->attr);
		snprintf(sl, sizeof(sl), MARK ", %s", a->label);
		for (int part = 0; part < (mf ? 2 : 1); part++) {
			snprintf(next, sizeof(next), "p%zuc%zu", pi, ++step);
			MEM(re, {
				fprintf(_f, "%s;", mark);
				if (!part)
					fputs(".+",
					      _f); /* present, even for "" */
				else if (mf->prefix) {
					put_lit(_f, mf->prefix);
					fputs(".*", _f);
				} else {
					fprintf(_f, ".*(?:%s).*", mf->re_src);
				}
			});
			MEM(s, put_sq(_f, next));
			rule(out, sl, re, MARK, s, NULL);
			free(s);
			free(re);
			snprintf(mark, sizeof(mark), "%s", next);
		}
	}
	MEM(s, put_lit(_f, mark));
	rule(out, MARK, s, OK, "'1'", NULL);
	free(s);
	MEM(s, {
		src_re(_f, p);
		fputc(';', _f);
	});
	rule(out, "__name__, " OK, s, NULL, NULL, "drop");
	free(s);
	/* constants, attribute copies, then the source labels cleared */
	for (size_t k = 0; k < p->nlabels; k++) {
		const struct tr_label *l = &p->labels[k];
		const struct tr_attr *a;
		char key[256], sl[600];

		tr_prom__label(l->key, key, sizeof(key));
		if (l->kind == TL_CONST && l->value) {
			MEM(s, put_repl_sq(_f, l->value));
			rule(out, OK, "1", key, s, NULL);
			free(s);
		} else if (l->kind == TL_ATTR &&
			   (a = profile__attr(prof, l->attr)) &&
			   strcmp(a->label, key)) {
			snprintf(sl, sizeof(sl), OK ", %s", a->label);
			rule(out, sl, "1;(.*)", key, "'${1}'", NULL);
		}
	}
	for (size_t i = 0; i < prof->nattrs; i++) {
		bool kept = false;

		for (size_t k = 0; k < p->nlabels && !kept; k++) {
			char key[256];

			tr_prom__label(p->labels[k].key, key, sizeof(key));
			kept = !strcmp(key, prof->attrs[i].label);
		}
		if (!kept)
			rule(out, OK, "1", prof->attrs[i].label, "''", NULL);
	}
	{
		char fam[512], *re = NULL;
		bool h = p->src->instrument == MI_HISTOGRAM;

		profile__family(p->src, fam, sizeof(fam));
		MEM(re, {
			fputs("1;", _f);
			put_lit(_f, fam);
			if (h)
				fputs("(_bucket|_sum|_count)", _f);
		});
		MEM(s, {
			fputc('\'', _f);
			fputs(tfam, _f);
			if (h)
				fputs("${1}", _f);
			fputc('\'', _f);
		});
		rule(out, OK ", __name__", re, "__name__", s, NULL);
		free(re);
		free(s);
	}
	fputs("  - regex: '" MARK ".*'\n    action: labeldrop\n", out);
	return 0;
}

int tr_relabel__config(FILE *out, struct tr_plan *plans, size_t n,
		       const struct tr_opts *o, struct tr_report *rep)
{
	bool *ok = calloc(n + 1, sizeof(*ok));
	size_t pi = 0;
	int err = 0;

	if (!ok)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char why[TR_REASON_MAX];
		const char *r;

		if (plans[i].pol->type != MP_DATA_PLANE) {
			report__na(
				rep, plans[i].pol->obj_name,
				"a ResourceFields policy reads API objects, not scraped series: use --target kube-state-metrics");
			continue;
		}
		r = refuse(&plans[i], o, why, sizeof(why));
		for (size_t j = 0; j < i && !r; j++) {
			if (!ok[j])
				continue;
			if (plans[j].src == plans[i].src) {
				snprintf(
					why, sizeof(why),
					"%s already relabels %s in this job: one source series becomes one target series",
					plans[j].pol->obj_name,
					plans[i].pol->src_metric);
				r = why;
			} else if (!strcmp(plans[j].def->name,
					   plans[i].def->name)) {
				snprintf(
					why, sizeof(why),
					"%s also feeds %s: relabelling cannot add two policies' series",
					plans[j].pol->obj_name,
					plans[i].def->name);
				r = why;
			}
		}
		if (r) {
			report__add(rep, plans[i].pol->obj_name, false, "%s",
				    r);
			continue;
		}
		if (!plans[i].nsubjects) {
			report__add(
				rep, plans[i].pol->obj_name, true,
				"no subject objects yet: no relabelling until one exists");
			continue;
		}
		ok[i] = true;
		pi++;
	}
	fputs("# metric_relabel_configs computing the contract's target series from the\n"
	      "# source series by relabelling alone (milometer translate --target\n"
	      "# prometheus-relabel). Put them in the scrape job that reads the sources\n"
	      "# (the agent's /metrics); other series pass unchanged.\n"
	      "scrape_configs:\n",
	      out);
	fprintf(out, "- job_name: %s\n  metric_relabel_configs:%s\n",
		o->object_name, pi ? "" : " []");
	pi = 0;
	for (size_t i = 0; i < n && !err; i++) {
		if (!ok[i])
			continue;
		err = put_policy(out, &plans[i], pi++, o);
		if (!err)
			report__add(
				rep, plans[i].pol->obj_name, true,
				"metric_relabel_configs %s -> %s (%zu subjects)",
				plans[i].pol->src_metric, plans[i].def->name,
				plans[i].nsubjects);
	}
	free(ok);
	return err;
}
