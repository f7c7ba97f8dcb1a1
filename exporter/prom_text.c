// SPDX-License-Identifier: Apache-2.0
/* Prometheus text 0.0.4 / OpenMetrics 1.0.0 exposition: see prom_text.h. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/model/hist_exp.h"
#include "exporter/prom_names.h"
#include "exporter/prom_text.h"

#define NAME_MAX_LEN 512

static bool media_is_om(const char *p, size_t n)
{
	static const char om[] = "application/openmetrics-text";
	const char *semi = memchr(p, ';', n), *q;
	size_t tl = semi ? (size_t)(semi - p) : n;

	while (tl && (p[tl - 1] == ' ' || p[tl - 1] == '\t'))
		tl--;
	if (tl != sizeof(om) - 1 || strncasecmp(p, om, tl))
		return false;
	/* q=0 means "not acceptable" */
	for (q = semi; q && q < p + n; q = memchr(q + 1, ';', p + n - q - 1)) {
		const char *v = q + 1;

		while (v < p + n && (*v == ' ' || *v == '\t'))
			v++;
		if (p + n - v >= 2 && (v[0] == 'q' || v[0] == 'Q') &&
		    v[1] == '=')
			return strtod(v + 2, NULL) > 0;
	}
	return true;
}

enum prom_format prom_text__negotiate(const char *accept)
{
	const char *p = accept;

	while (p && *p) {
		const char *end = strchr(p, ',');
		size_t n = end ? (size_t)(end - p) : strlen(p);

		while (n && (*p == ' ' || *p == '\t'))
			p++, n--;
		if (media_is_om(p, n))
			return PROM_FMT_OPENMETRICS;
		p = end ? end + 1 : NULL;
	}
	return PROM_FMT_TEXT;
}

const char *prom_text__content_type(enum prom_format fmt)
{
	return fmt == PROM_FMT_OPENMETRICS
		       ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
		       : "text/plain; version=0.0.4; charset=utf-8";
}

void prom_text__format_double(char *buf, size_t len, double v,
			      enum prom_format fmt)
{
	char tmp[40], *e;
	int p, x;

	if (isnan(v)) {
		snprintf(buf, len, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	/* shortest precision that reads back as the same double */
	for (p = 1; p < 17; p++) {
		snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	snprintf(tmp, sizeof(tmp), "%.*e", p - 1, v);
	e = strchr(tmp, 'e');
	x = atoi(e + 1);
	/* Go's 'g' with shortest precision switches to %e at exponent 6 */
	if (x < -4 || x >= 6)
		snprintf(buf, len, "%s", tmp);
	else
		snprintf(buf, len, "%.*f", p - 1 - x > 0 ? p - 1 - x : 0, v);
	if (fmt == PROM_FMT_OPENMETRICS && !strpbrk(buf, ".e"))
		strncat(buf, ".0", len - strlen(buf) - 1);
}

/* ------------------------------------------------------------------ labels */

struct label_out {
	char key[NAME_MAX_LEN];
	const char *value;
	size_t orig; /* index in the point's labels (sorted by OTel key) */
};

struct writer {
	FILE *out;
	enum prom_format fmt;
	int err;
	char **names; /* families written, to refuse collisions */
	size_t nnames, cap;
	struct label_out *lo;
	size_t locap;
	const struct mlabel *consts; /* added to every series */
	size_t nconsts;
	prom_keep_fn keep; /* NULL: every point */
	void *keep_ctx;
	size_t kept;
};

static int cmp_label_out(const void *a, const void *b)
{
	const struct label_out *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	/* equal keys keep OTel key order, which decides the ';' join order */
	return c ? c : (x->orig > y->orig) - (x->orig < y->orig);
}

/*
 * Write `{k="v",...` (no closing brace) or nothing. Returns whether anything
 * was written. OTel keys that sanitize to the same name are merged, values
 * joined by ';' in the order of the original keys, as the spec requires.
 */
static int write_labels(struct writer *w, const struct mpoint_view *p,
			const char *extra_key, const char *extra_value)
{
	size_t i, n = 0;
	bool any = false;

	if (p->nlabels + w->nconsts > w->locap) {
		struct label_out *lo =
			realloc(w->lo, (p->nlabels + w->nconsts) * sizeof(*lo));

		if (!lo)
			return -ENOMEM;
		w->lo = lo;
		w->locap = p->nlabels + w->nconsts;
	}
	for (i = 0; i < p->nlabels; i++) {
		if (prom_names__label(p->labels[i].key, w->lo[n].key,
				      sizeof(w->lo[n].key)) <= 0)
			continue;
		/* the exposition's own label wins over a user label */
		if (extra_key && !strcmp(w->lo[n].key, extra_key))
			continue;
		w->lo[n].value = p->labels[i].value;
		w->lo[n].orig = i;
		n++;
	}
	/* constant labels (cluster identity) unless the series has the key */
	for (i = 0; i < w->nconsts; i++) {
		size_t j, had = n;

		if (prom_names__label(w->consts[i].key, w->lo[n].key,
				      sizeof(w->lo[n].key)) <= 0)
			continue;
		for (j = 0; j < had && strcmp(w->lo[j].key, w->lo[n].key); j++)
			;
		if (j < had || (extra_key && !strcmp(w->lo[n].key, extra_key)))
			continue;
		w->lo[n].value = w->consts[i].value;
		w->lo[n].orig = p->nlabels + i;
		n++;
	}
	if (n > 1)
		qsort(w->lo, n, sizeof(*w->lo), cmp_label_out);
	for (i = 0; i < n; i++) {
		if (i && !strcmp(w->lo[i].key, w->lo[i - 1].key)) {
			fputc(';', w->out);
		} else {
			if (i)
				fputs("\",", w->out);
			else
				fputc('{', w->out);
			fprintf(w->out, "%s=\"", w->lo[i].key);
		}
		prom_names__write_escaped(w->out, w->lo[i].value, true);
		any = true;
	}
	if (any)
		fputc('"', w->out);
	if (extra_key) {
		fprintf(w->out, "%s%s=\"%s\"", any ? "," : "{", extra_key,
			extra_value);
		any = true;
	}
	if (any)
		fputc('}', w->out);
	return 0;
}

static void write_value(struct writer *w, double v)
{
	char buf[48];

	prom_text__format_double(buf, sizeof(buf), v, w->fmt);
	fprintf(w->out, " %s\n", buf);
}

static int write_sample(struct writer *w, const char *name, const char *suffix,
			const struct mpoint_view *p, const char *le, double v,
			const int64_t *iv)
{
	int err;

	fputs(name, w->out);
	fputs(suffix, w->out);
	err = write_labels(w, p, le ? "le" : NULL, le);
	if (err)
		return err;
	if (iv)
		fprintf(w->out, " %lld\n", (long long)*iv);
	else
		write_value(w, v);
	return 0;
}

static int write_bucket(struct writer *w, const char *name,
			const struct mpoint_view *p, double le, uint64_t cum)
{
	char b[48];
	int64_t c = (int64_t)cum;

	prom_text__format_double(b, sizeof(b), le, w->fmt);
	return write_sample(w, name, "_bucket", p, b, 0, &c);
}

static int write_explicit(struct writer *w, const char *name,
			  const struct mpoint_view *p)
{
	const struct mhist_explicit_view *h = p->explicit_h;
	uint64_t cum = 0;
	size_t i;
	int err;

	for (i = 0; i < h->nbounds; i++) {
		cum += h->counts[i];
		err = write_bucket(w, name, p, h->bounds[i], cum);
		if (err)
			return err;
	}
	return write_bucket(w, name, p, INFINITY, p->count);
}

static int write_exponential(struct writer *w, const char *name,
			     const struct mpoint_view *p)
{
	const struct mhist_exp_view *h = p->exp_h;
	double last = -INFINITY, le;
	uint64_t cum = 0;
	size_t i;
	int err;

	/* most negative first: bucket i holds [-base^(i+1), -base^i) */
	for (i = h->neg_n; i-- > 0;) {
		cum += hist_exp__count_at(h->neg_counts, h->neg_width, i);
		le = -hist_exp__lower_boundary(h->neg_offset + (int32_t)i,
					       h->scale);
		if (!(le > last) || le == 0)
			continue; /* saturated at the double range: fold up */
		last = le;
		err = write_bucket(w, name, p, le, cum);
		if (err)
			return err;
	}
	cum += h->zero_count;
	if (h->zero_count || h->neg_n) {
		last = 0;
		err = write_bucket(w, name, p, 0, cum);
		if (err)
			return err;
	}
	for (i = 0; i < h->pos_n; i++) {
		cum += hist_exp__count_at(h->pos_counts, h->pos_width, i);
		le = hist_exp__lower_boundary(h->pos_offset + (int32_t)i + 1,
					      h->scale);
		if (!(le > last) || isinf(le))
			continue;
		last = le;
		err = write_bucket(w, name, p, le, cum);
		if (err)
			return err;
	}
	return write_bucket(w, name, p, INFINITY, p->count);
}

/* --------------------------------------------------------------- families */

static bool name_taken(struct writer *w, const char *name)
{
	size_t i;
	char *dup;

	for (i = 0; i < w->nnames; i++)
		if (!strcmp(w->names[i], name))
			return true;
	if (w->nnames == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		char **n = realloc(w->names, cap * sizeof(*n));

		if (!n)
			return true;
		w->names = n;
		w->cap = cap;
	}
	dup = strdup(name);
	if (!dup)
		return true;
	w->names[w->nnames++] = dup;
	return false;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static void write_meta(struct writer *w, const struct mmetric_desc *d,
		       const char *family)
{
	bool om = w->fmt == PROM_FMT_OPENMETRICS;
	char unit[128];

	if (d->description && d->description[0]) {
		fprintf(w->out, "# HELP %s ", family);
		/* only OpenMetrics escapes '"' in HELP */
		prom_names__write_escaped(w->out, d->description, om);
		fputc('\n', w->out);
	}
	fprintf(w->out, "# TYPE %s %s\n", family,
		prom_names__type(d->instrument));
	if (om &&
	    prom_names__unit(d->unit, d->instrument, unit, sizeof(unit)) > 0) {
		char suffix[130];

		snprintf(suffix, sizeof(suffix), "_%s", unit);
		/* OpenMetrics: UNIT must be a suffix of the family name */
		if (ends_with(family, suffix))
			fprintf(w->out, "# UNIT %s %s\n", family, unit);
	}
}

static bool has_negative(const struct mmetric_desc *d,
			 const struct mpoint_view *pts, size_t n)
{
	size_t i;

	if (d->hist == MH_EXPLICIT)
		return d->nbounds && d->bounds[0] < 0;
	for (i = 0; i < n; i++)
		if (pts[i].exp_h && pts[i].exp_h->neg_n)
			return true;
	return false;
}

static int write_family(void *ctx, const struct mmetric_desc *d,
			const struct mpoint_view *pts, size_t n)
{
	struct writer *w = ctx;
	char name[NAME_MAX_LEN], family[NAME_MAX_LEN];
	bool om = w->fmt == PROM_FMT_OPENMETRICS, sum = true;
	size_t i;
	int err = 0;

	if (prom_names__metric(d, name, sizeof(name)) <= 0)
		return 0; /* a name past 511 bytes: nobody can query it */
	snprintf(family, sizeof(family), "%s", name);
	/* OpenMetrics names the counter family without its _total sample */
	if (om && d->instrument == MI_COUNTER)
		family[strlen(family) - 6] = 0;
	if (w->keep) {
		size_t k = 0;

		for (i = 0; i < n; i++)
			k += w->keep(w->keep_ctx, pts[i].subject);
		if (!k)
			return 0; /* not even the family's name is shown */
	}
	if (name_taken(w, family))
		return 0;
	write_meta(w, d, family);
	/*
	 * OpenMetrics: with negative buckets _sum is no longer a counter and
	 * must be left out, and _count goes with it ("if and only if a Sum
	 * Value is present ... _count").
	 */
	if (om && d->instrument == MI_HISTOGRAM)
		sum = !has_negative(d, pts, n);
	for (i = 0; i < n && !err; i++) {
		const struct mpoint_view *p = &pts[i];
		int64_t cnt = (int64_t)p->count;

		if (w->keep && !w->keep(w->keep_ctx, p->subject))
			continue;
		w->kept++;
		if (d->instrument != MI_HISTOGRAM) {
			err = write_sample(w, name, "", p, NULL, p->value,
					   d->is_int ? &p->ivalue : NULL);
			continue;
		}
		err = p->exp_h ? write_exponential(w, name, p)
			       : write_explicit(w, name, p);
		if (!err && sum)
			err = write_sample(w, name, "_sum", p, NULL, p->sum,
					   NULL);
		if (!err && sum)
			err = write_sample(w, name, "_count", p, NULL, 0, &cnt);
	}
	if (ferror(w->out))
		err = -EIO;
	return err;
}

int prom_text__write_target_info(FILE *out, const struct mlabel *attrs,
				 size_t n, enum prom_format fmt)
{
	struct writer w = { .out = out, .fmt = fmt };
	struct mpoint_view p = { .labels = attrs, .nlabels = n };
	int err;

	if (!n)
		return 0;
	/* an OpenMetrics info family is named without its _info sample */
	if (fmt == PROM_FMT_OPENMETRICS)
		fputs("# HELP target Target metadata\n# TYPE target info\n",
		      out);
	else
		fputs("# HELP target_info Target metadata\n"
		      "# TYPE target_info gauge\n",
		      out);
	fputs("target_info", out);
	err = write_labels(&w, &p, NULL, NULL);
	fputs(" 1\n", out);
	free(w.lo);
	if (!err && ferror(out))
		err = -EIO;
	return err;
}

int prom_text__write(FILE *out, struct mstore *s, enum prom_format fmt,
		     uint64_t now_ns)
{
	return prom_text__write_labelled(out, s, fmt, now_ns, NULL, 0);
}

int prom_text__write_labelled(FILE *out, struct mstore *s, enum prom_format fmt,
			      uint64_t now_ns, const struct mlabel *consts,
			      size_t nconsts)
{
	return prom_text__write_filtered(out, s, fmt, now_ns, consts, nconsts,
					 NULL, NULL, NULL);
}

int prom_text__write_filtered(FILE *out, struct mstore *s, enum prom_format fmt,
			      uint64_t now_ns, const struct mlabel *consts,
			      size_t nconsts, prom_keep_fn keep, void *keep_ctx,
			      size_t *kept)
{
	struct writer w = {
		.out = out,
		.fmt = fmt,
		.consts = consts,
		.nconsts = nconsts,
		.keep = keep,
		.keep_ctx = keep_ctx,
	};
	size_t i;
	int err;

	err = mstore__collect(s, MT_CUMULATIVE, now_ns, write_family, &w);
	if (!err && fmt == PROM_FMT_OPENMETRICS)
		fputs("# EOF\n", out);
	if (!err && ferror(out))
		err = -EIO;
	for (i = 0; i < w.nnames; i++)
		free(w.names[i]);
	free(w.names);
	free(w.lo);
	if (kept)
		*kept = w.kept;
	return err;
}
