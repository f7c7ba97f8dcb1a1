// SPDX-License-Identifier: Apache-2.0
/*
 * The prometheus-alerts target: alerting rules over the contract's target
 * metrics, per HTTPRoute, for two objectives:
 *
 *   errorRate  sum by (route) (rate(COUNTER{errorLabel=~errorValues}[w]))
 *              / sum by (route) (rate(COUNTER[w])) > threshold
 *   latency    histogram_quantile(q, sum by (route, le)
 *                  (rate(HISTOGRAM_bucket[w]))) > threshold
 *
 * The thresholds, windows, `for:` and severities come from a small YAML
 * file (docs/alerts.md) with defaults and per-namespace / per-route
 * overrides. The contract carries no objectives; what it guarantees is what
 * the rules read: the metric's name, unit, instrument and label keys. So
 * the file is checked against the accepted MetricDefinitions, and a
 * mismatch is an error naming the file's line, never a rule that reads
 * nothing.
 *
 * Every route falls in exactly one scope: a route override, else its
 * namespace's override, else the defaults. The scopes are label matchers
 * (the defaults exclude each overridden namespace, a namespace scope its
 * overridden routes); the defaults drop routes overridden in a namespace
 * of their own with `unless`. So no route is alerted twice with different
 * thresholds, and each rule carries its scope as the label objective_scope
 * (default, NS or NS/NAME), which also tells the rules apart.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/prom_names.h"
#include "exporter/prom_text.h"
#include "policy/contract/contract.h"
#include "policy/contract/crd_definition.h"
#include "policy/source/doc.h"
#include "policy/translate/translate_impl.h"

#define DEF_COUNT                                                              \
	"gateway.networking.k8s.io.httproute.delivery.upstream_request.count"
#define DEF_LATENCY                                                            \
	"gateway.networking.k8s.io.httproute.delivery.upstream_request.latency"

enum { OBJ_ERR, OBJ_LAT, OBJ_N };

static const char *const obj_key[OBJ_N] = { "errorRate", "latency" };
static const char *const obj_alert[OBJ_N] = { "HTTPRouteErrorRate",
					      "HTTPRouteLatency" };

struct al_obj {
	bool enabled;
	double threshold;
	double quantile; /* latency */
	char window[32];
	char forv[32];
	char severity[64];
};

struct al_scope {
	const char *ns;   /* NULL: the defaults */
	const char *name; /* NULL: the whole namespace */
	struct al_obj obj[OBJ_N];
	const struct doc_node *node; /* NULL: implied by a route override */
};

struct al_cfg {
	const char *file; /* "" for the built-in defaults */
	const char *metric[OBJ_N];
	const struct doc_node *metric_node[OBJ_N];
	const char *label_ns, *label_name;
	const struct doc_node *route_labels;
	const char *err_label;
	const struct doc_node *err_label_node;
	const char **err_values;
	size_t nerr_values;
	struct al_scope *scopes; /* [0]: the defaults */
	size_t nscopes;
};

struct al_err {
	char *buf;
	size_t len;
	const char *file;
};

static int fail(struct al_err *e, const struct doc_node *n, const char *fmt,
		...) __attribute__((format(printf, 3, 4)));
static int fail(struct al_err *e, const struct doc_node *n, const char *fmt,
		...)
{
	va_list ap;
	int off;

	if (n && n->line)
		off = snprintf(e->buf, e->len, "%s:%u: ", e->file, n->line);
	else
		off = snprintf(e->buf, e->len, "%s: ", e->file);
	if (off < 0 || (size_t)off >= e->len)
		off = 0;
	va_start(ap, fmt);
	vsnprintf(e->buf + off, e->len - off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Every key of map n in allowed (NULL-terminated), else the first other. */
static int check_keys(struct al_err *e, const struct doc_node *n,
		      const char *where, const char *const *allowed)
{
	if (n->kind != DOC_MAP)
		return fail(e, n, "%s: expected a map, found a %s", where,
			    doc__kind_name(n->kind));
	for (size_t i = 0; i < n->map.n; i++) {
		size_t k;
		char known[256] = "";

		for (k = 0; allowed[k]; k++)
			if (!strcmp(n->map.keys[i], allowed[k]))
				break;
		if (allowed[k])
			continue;
		for (k = 0; allowed[k]; k++)
			snprintf(known + strlen(known),
				 sizeof(known) - strlen(known), "%s%s",
				 k ? ", " : "", allowed[k]);
		return fail(e, n->map.vals[i],
			    "%s: unknown key \"%s\"; the keys are %s", where,
			    n->map.keys[i], known);
	}
	return 0;
}

/* A Prometheus duration: one or more <int><unit>, units ms s m h d w y. */
static bool is_duration(const char *s)
{
	static const char *const units[] = {
		"ms", "s", "m", "h", "d", "w", "y"
	};

	if (!*s)
		return false;
	while (*s) {
		size_t k;

		if (*s < '0' || *s > '9')
			return false;
		while (*s >= '0' && *s <= '9')
			s++;
		for (k = 0; k < sizeof(units) / sizeof(units[0]); k++)
			if (!strncmp(s, units[k], strlen(units[k])) &&
			    !(units[k][0] == 'm' && units[k][1] == 0 &&
			      s[1] == 's'))
				break;
		if (k == sizeof(units) / sizeof(units[0]))
			return false;
		s += strlen(units[k]);
	}
	return true;
}

static int get_num(struct al_err *e, const struct doc_node *v,
		   const char *where, const char *key, double *out)
{
	if (v->kind == DOC_INT)
		*out = (double)v->i;
	else if (v->kind == DOC_DOUBLE)
		*out = v->d;
	else
		return fail(e, v, "%s.%s: expected a number, found a %s", where,
			    key, doc__kind_name(v->kind));
	if (!isfinite(*out))
		return fail(e, v, "%s.%s: must be a finite number", where, key);
	return 0;
}

static int get_dur(struct al_err *e, const struct doc_node *v,
		   const char *where, const char *key, char *out, size_t len)
{
	if (v->kind != DOC_STRING || !is_duration(v->str.s) ||
	    v->str.len >= len)
		return fail(
			e, v,
			"%s.%s: expected a Prometheus duration such as 5m, 30s or 1h30m",
			where, key);
	snprintf(out, len, "%s", v->str.s);
	return 0;
}

/* One objective's settings in n over the inherited ones in o. */
static int parse_obj(struct al_err *e, const struct doc_node *n, int which,
		     bool top, const char *scope, struct al_obj *o)
{
	static const char *const err_top[] = {
		"enabled", "threshold",  "window",      "for", "severity",
		"metric",  "errorLabel", "errorValues", NULL
	};
	static const char *const lat_top[] = { "enabled",  "threshold",
					       "window",   "for",
					       "severity", "metric",
					       "quantile", NULL };
	static const char *const err_ovr[] = { "enabled", "threshold", "window",
					       "for",     "severity",  NULL };
	static const char *const lat_ovr[] = { "enabled",  "threshold",
					       "window",   "for",
					       "severity", "quantile",
					       NULL };
	char where[160];
	const struct doc_node *v;
	int ret;

	snprintf(where, sizeof(where), "%s%s", scope, obj_key[which]);
	if (!top && (doc__get(n, "metric") || doc__get(n, "errorLabel") ||
		     doc__get(n, "errorValues")))
		return fail(
			e,
			doc__get(n, "metric") ? doc__get(n, "metric")
			: doc__get(n, "errorLabel")
				? doc__get(n, "errorLabel")
				: doc__get(n, "errorValues"),
			"%s: the metric and its labels are set once, at the top level (%s:), for every route",
			where, obj_key[which]);
	ret = check_keys(e, n, where,
			 which == OBJ_ERR ? (top ? err_top : err_ovr)
					  : (top ? lat_top : lat_ovr));
	if (ret)
		return ret;
	if ((v = doc__get(n, "enabled"))) {
		if (v->kind != DOC_BOOL)
			return fail(e, v, "%s.enabled: expected true or false",
				    where);
		o->enabled = v->b;
	}
	if ((v = doc__get(n, "threshold"))) {
		if ((ret = get_num(e, v, where, "threshold", &o->threshold)))
			return ret;
		if (which == OBJ_ERR && !(o->threshold > 0 && o->threshold < 1))
			return fail(
				e, v,
				"%s.threshold: %g is not a ratio between 0 and 1 (exclusive); write 0.05 for 5%%",
				where, o->threshold);
		if (which == OBJ_LAT && !(o->threshold > 0))
			return fail(
				e, v,
				"%s.threshold: must be above 0, in the MetricDefinition's unit",
				where);
	}
	if ((v = doc__get(n, "quantile"))) {
		if ((ret = get_num(e, v, where, "quantile", &o->quantile)))
			return ret;
		if (!(o->quantile > 0 && o->quantile < 1))
			return fail(
				e, v,
				"%s.quantile: %g is not between 0 and 1 (exclusive); write 0.99 for p99",
				where, o->quantile);
	}
	if ((v = doc__get(n, "window")) &&
	    (ret = get_dur(e, v, where, "window", o->window,
			   sizeof(o->window))))
		return ret;
	if ((v = doc__get(n, "for")) &&
	    (ret = get_dur(e, v, where, "for", o->forv, sizeof(o->forv))))
		return ret;
	if ((v = doc__get(n, "severity"))) {
		if (v->kind != DOC_STRING || !v->str.len ||
		    v->str.len >= sizeof(o->severity) ||
		    strpbrk(v->str.s, "\"\\\n"))
			return fail(
				e, v,
				"%s.severity: expected a short word such as warning or critical",
				where);
		snprintf(o->severity, sizeof(o->severity), "%s", v->str.s);
	}
	return 0;
}

static int parse_top(struct al_err *e, const struct doc_node *root,
		     struct al_cfg *c)
{
	static const char *const top[] = { "routeLabels", "errorRate",
					   "latency", "overrides", NULL };
	static const char *const rl[] = { "namespace", "name", NULL };
	const struct doc_node *n, *v;
	int ret;

	if ((ret = check_keys(e, root, "the alerts configuration", top)))
		return ret;
	if ((n = doc__get(root, "routeLabels"))) {
		if ((ret = check_keys(e, n, "routeLabels", rl)))
			return ret;
		c->route_labels = n;
		for (int i = 0; i < 2; i++) {
			v = doc__get(n, rl[i]);
			if (!v)
				continue;
			if (v->kind != DOC_STRING || !v->str.len)
				return fail(
					e, v,
					"routeLabels.%s: expected a label key of the MetricDefinitions",
					rl[i]);
			*(i ? &c->label_name : &c->label_ns) = v->str.s;
		}
	}
	for (int w = 0; w < OBJ_N; w++) {
		n = doc__get(root, obj_key[w]);
		if (!n)
			continue;
		if ((ret = parse_obj(e, n, w, true, "", &c->scopes[0].obj[w])))
			return ret;
		if ((v = doc__get(n, "metric"))) {
			if (v->kind != DOC_STRING || !v->str.len)
				return fail(
					e, v,
					"%s.metric: expected a MetricDefinition's spec.metric.name",
					obj_key[w]);
			c->metric[w] = v->str.s;
			c->metric_node[w] = v;
		}
	}
	n = doc__get(root, "errorRate");
	if (n && (v = doc__get(n, "errorLabel"))) {
		if (v->kind != DOC_STRING || !v->str.len)
			return fail(
				e, v,
				"errorRate.errorLabel: expected a label key of the counter's MetricDefinition");
		c->err_label = v->str.s;
		c->err_label_node = v;
	}
	if (n && (v = doc__get(n, "errorValues"))) {
		if (v->kind != DOC_LIST || !v->list.n)
			return fail(
				e, v,
				"errorRate.errorValues: expected a non-empty list of label values, e.g. [\"5xx\"]");
		c->err_values = calloc(v->list.n, sizeof(*c->err_values));
		if (!c->err_values)
			return -ENOMEM;
		for (size_t i = 0; i < v->list.n; i++) {
			if (v->list.items[i]->kind != DOC_STRING)
				return fail(
					e, v->list.items[i],
					"errorRate.errorValues: quote each value (\"5xx\"), found a %s",
					doc__kind_name(v->list.items[i]->kind));
			c->err_values[i] = v->list.items[i]->str.s;
		}
		c->nerr_values = v->list.n;
	}
	return 0;
}

static const struct al_scope *find_scope(const struct al_cfg *c, const char *ns,
					 const char *name)
{
	for (size_t i = 1; i < c->nscopes; i++)
		if (!strcmp(c->scopes[i].ns, ns) &&
		    !c->scopes[i].name == !name &&
		    (!name || !strcmp(c->scopes[i].name, name)))
			return &c->scopes[i];
	return NULL;
}

/* Namespace overrides first, then routes over their namespace's values. */
static int parse_overrides(struct al_err *e, const struct doc_node *root,
			   struct al_cfg *c)
{
	static const char *const keys[] = { "namespace", "name", "errorRate",
					    "latency", NULL };
	const struct doc_node *l = doc__get(root, "overrides");
	int ret;

	if (!l)
		return 0;
	if (l->kind != DOC_LIST)
		return fail(
			e, l,
			"overrides: expected a list of {namespace, name, errorRate, latency}");
	c->scopes = realloc(c->scopes, (1 + l->list.n) * sizeof(*c->scopes));
	if (!c->scopes)
		return -ENOMEM;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < l->list.n; i++) {
			const struct doc_node *it = l->list.items[i], *ns, *nm;
			const struct al_scope *base, *dup;
			struct al_scope *s;
			char where[400];

			if ((ret = check_keys(e, it, "overrides[]", keys)))
				return ret;
			ns = doc__get(it, "namespace");
			nm = doc__get(it, "name");
			if (!ns || ns->kind != DOC_STRING || !ns->str.len)
				return fail(
					e, it,
					"overrides[%zu]: namespace is required (a string); a route is namespace plus name",
					i);
			if (nm && (nm->kind != DOC_STRING || !nm->str.len))
				return fail(
					e, nm,
					"overrides[%zu].name: expected an HTTPRoute's name",
					i);
			if (!!nm != pass)
				continue;
			dup = find_scope(c, ns->str.s, nm ? nm->str.s : NULL);
			if (dup && dup->node)
				return fail(
					e, it,
					"overrides[%zu]: %s%s%s is already overridden at line %u; merge the two entries",
					i, ns->str.s, nm ? "/" : "",
					nm ? nm->str.s : "", dup->node->line);
			base = nm ? find_scope(c, ns->str.s, NULL) : NULL;
			if (!base)
				base = &c->scopes[0];
			s = &c->scopes[c->nscopes++];
			*s = *base;
			s->ns = ns->str.s;
			s->name = nm ? nm->str.s : NULL;
			s->node = it;
			snprintf(where, sizeof(where), "overrides[%zu].", i);
			for (int w = 0; w < OBJ_N; w++) {
				const struct doc_node *o =
					doc__get(it, obj_key[w]);

				if (o && (ret = parse_obj(e, o, w, false, where,
							  &s->obj[w])))
					return ret;
			}
		}
	}
	return 0;
}

static void defaults(struct al_cfg *c)
{
	struct al_scope *d = &c->scopes[0];

	c->metric[OBJ_ERR] = DEF_COUNT;
	c->metric[OBJ_LAT] = DEF_LATENCY;
	c->label_ns = "resource_namespace";
	c->label_name = "resource_name";
	c->err_label = "response_code_family";
	c->nscopes = 1;
	*d = (struct al_scope){ 0 };
	for (int w = 0; w < OBJ_N; w++) {
		d->obj[w].enabled = true;
		snprintf(d->obj[w].window, sizeof(d->obj[w].window), "5m");
		snprintf(d->obj[w].severity, sizeof(d->obj[w].severity),
			 "warning");
	}
	d->obj[OBJ_ERR].threshold = 0.05;
	snprintf(d->obj[OBJ_ERR].forv, sizeof(d->obj[OBJ_ERR].forv), "5m");
	d->obj[OBJ_LAT].threshold = 1;
	d->obj[OBJ_LAT].quantile = 0.99;
	snprintf(d->obj[OBJ_LAT].forv, sizeof(d->obj[OBJ_LAT].forv), "10m");
}

static const char *const default_err_values[] = { "5xx" };

/* The definitions the enabled objectives read, checked against the file. */
static int check_defs(struct al_err *e, struct contract *c,
		      const struct al_cfg *cfg, struct metric_def *defs[OBJ_N])
{
	static const enum minstrument want[OBJ_N] = { MI_COUNTER,
						      MI_HISTOGRAM };
	static const char *const want_name[OBJ_N] = { "a counter",
						      "a histogram" };

	for (int w = 0; w < OBJ_N; w++) {
		bool used = false;
		const struct doc_node *at = cfg->metric_node[w];
		const char *lk[3] = { cfg->label_ns, cfg->label_name,
				      w == OBJ_ERR ? cfg->err_label : NULL };
		const struct doc_node *lat[3] = { cfg->route_labels,
						  cfg->route_labels,
						  cfg->err_label_node };

		for (size_t i = 0; i < cfg->nscopes; i++)
			used |= cfg->scopes[i].obj[w].enabled;
		if (!used)
			continue;
		defs[w] = contract__find_def(c, cfg->metric[w]);
		if (!defs[w])
			return fail(
				e, at,
				"%s.metric: no accepted MetricDefinition has spec.metric.name %s; name one that exists (`milometer check` lists them) or set %s.enabled: false",
				obj_key[w], cfg->metric[w], obj_key[w]);
		if (defs[w]->instrument != want[w])
			return fail(
				e, at,
				"%s.metric: %s (MetricDefinition %s) is not %s; the %s objective needs %s",
				obj_key[w], cfg->metric[w], defs[w]->obj_name,
				want_name[w], obj_key[w], want_name[w]);
		for (int k = 0; k < 3; k++)
			if (lk[k] && !crd_definition__label(defs[w], lk[k]))
				return fail(
					e, lat[k] ? lat[k] : at,
					"%s: %s is not a label of MetricDefinition %s (%s); use one of its spec.labels keys",
					k == 2 ? "errorRate.errorLabel"
					       : "routeLabels",
					lk[k], defs[w]->obj_name,
					cfg->metric[w]);
	}
	return 0;
}

static void put_alt(FILE *f, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc('|', f);
		tr_prom__put_re(f, v[i]);
	}
}

/* Matchers putting exactly the routes of scope s in; whether any. */
static bool put_scope(FILE *f, const struct al_cfg *c, size_t si,
		      const char *lns, const char *lname)
{
	const struct al_scope *s = &c->scopes[si];
	bool any = false;

	if (!s->ns) {
		/* each namespace has at most one scope of its own */
		for (size_t i = 1; i < c->nscopes; i++) {
			if (c->scopes[i].name)
				continue;
			fputs(any ? "|" : "", f);
			if (!any)
				fprintf(f, "%s!~\"", lns);
			tr_prom__put_re(f, c->scopes[i].ns);
			any = true;
		}
		if (any)
			fputc('"', f);
		return any;
	}
	fprintf(f, "%s=\"", lns);
	tr_prom__put_str(f, s->ns);
	fputc('"', f);
	if (s->name) {
		fprintf(f, ", %s=\"", lname);
		tr_prom__put_str(f, s->name);
		fputc('"', f);
		return true;
	}
	for (size_t i = 1; i < c->nscopes; i++) {
		if (!c->scopes[i].name || strcmp(c->scopes[i].ns, s->ns))
			continue;
		if (!any)
			fprintf(f, ", %s!~\"", lname);
		else
			fputc('|', f);
		tr_prom__put_re(f, c->scopes[i].name);
		any = true;
	}
	if (any)
		fputc('"', f);
	return true;
}

/*
 * The defaults' exception for routes overridden in a namespace that has no
 * override of its own (the namespace's other routes keep the defaults).
 */
static void put_unless(FILE *f, const struct al_cfg *c, size_t si,
		       const char *series, const char *lns, const char *lname)
{
	bool any = false;

	if (c->scopes[si].ns)
		return;
	for (size_t i = 1; i < c->nscopes; i++) {
		const struct al_scope *s = &c->scopes[i];

		if (!s->name || find_scope(c, s->ns, NULL))
			continue;
		if (!any)
			fprintf(f, "unless on (%s, %s) (\n    ", lns, lname);
		else
			fputs("\n  or ", f);
		fprintf(f, "%s{%s=\"", series, lns);
		tr_prom__put_str(f, s->ns);
		fprintf(f, "\", %s=\"", lname);
		tr_prom__put_str(f, s->name);
		fputs("\"}", f);
		any = true;
	}
	if (any)
		fputs("\n)\n", f);
}

static void num(char *b, size_t len, double v)
{
	prom_text__format_double(b, len, v, PROM_FMT_TEXT);
}

static void scope_name(char *b, size_t len, const struct al_scope *s)
{
	if (!s->ns)
		snprintf(b, len, "default");
	else if (s->name)
		snprintf(b, len, "route %s/%s", s->ns, s->name);
	else
		snprintf(b, len, "namespace %s", s->ns);
}

/* A YAML double-quoted scalar. */
static void put_q(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fputc('\\', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static int put_alert(FILE *out, const char *ind, const struct al_cfg *c,
		     size_t si, int w, struct metric_def *def)
{
	const struct al_scope *s = &c->scopes[si];
	const struct al_obj *o = &s->obj[w];
	struct mmetric_desc d = { .name = def->name,
				  .unit = def->unit,
				  .instrument = def->instrument };
	char fam[512], lns[256], lname[256], lerr[256], th[40], q[40];
	char sc[600], unitw[64], msg[2048];
	char *expr = NULL;
	size_t len = 0;
	FILE *f;

	if (prom_names__metric(&d, fam, sizeof(fam)) < 0 ||
	    tr_prom__label(c->label_ns, lns, sizeof(lns)) ||
	    tr_prom__label(c->label_name, lname, sizeof(lname)) ||
	    tr_prom__label(c->err_label, lerr, sizeof(lerr)))
		return -ENOSPC;
	num(th, sizeof(th), o->threshold);
	num(q, sizeof(q), o->quantile);
	scope_name(sc, sizeof(sc), s);
	f = open_memstream(&expr, &len);
	if (!f)
		return -ENOMEM;
	if (w == OBJ_ERR) {
		for (int part = 0; part < 2; part++) {
			fprintf(f, "%s  sum by (%s, %s) (rate(%s{",
				part ? "/\n" : "(\n", lns, lname, fam);
			bool any = put_scope(f, c, si, lns, lname);

			if (!part) {
				fprintf(f, "%s%s=~\"", any ? ", " : "", lerr);
				put_alt(f, c->err_values, c->nerr_values);
				fputc('"', f);
			}
			fprintf(f, "}[%s]))\n", o->window);
		}
		fprintf(f, ") > %s\n", th);
		put_unless(f, c, si, fam, lns, lname);
	} else {
		fprintf(f,
			"histogram_quantile(%s,\n  sum by (%s, %s, le) (rate(%s_bucket{",
			q, lns, lname, fam);
		put_scope(f, c, si, lns, lname);
		fprintf(f, "}[%s]))\n) > %s\n", o->window, th);
		snprintf(sc, sizeof(sc), "%s_bucket", fam);
		put_unless(f, c, si, sc, lns, lname);
		scope_name(sc, sizeof(sc), s);
	}
	if (fclose(f)) {
		free(expr);
		return -ENOMEM;
	}
	fprintf(out, "%s- alert: %s\n%s  expr: |\n", ind, obj_alert[w], ind);
	for (char *p = expr, *nl; *p; p = nl + 1) {
		nl = strchr(p, '\n');
		fprintf(out, "%s    %.*s\n", ind, (int)(nl - p), p);
	}
	free(expr);
	fprintf(out, "%s  for: %s\n%s  labels:\n%s    severity: %s\n", ind,
		o->forv, ind, ind, o->severity);
	fprintf(out, "%s    objective_scope: ", ind);
	if (!s->ns) {
		put_q(out, "default");
	} else {
		snprintf(msg, sizeof(msg), "%s%s%s", s->ns, s->name ? "/" : "",
			 s->name ? s->name : "");
		put_q(out, msg);
	}
	fputc('\n', out);
	fprintf(out, "%s  annotations:\n%s    summary: ", ind, ind);
	if (w == OBJ_ERR) {
		char pct[40], vals[256] = "";

		num(pct, sizeof(pct), o->threshold * 100);
		for (size_t i = 0; i < c->nerr_values; i++)
			snprintf(vals + strlen(vals),
				 sizeof(vals) - strlen(vals), "%s%s",
				 i ? "|" : "", c->err_values[i]);
		snprintf(
			msg, sizeof(msg),
			"HTTPRoute {{ $labels.%s }}/{{ $labels.%s }}: {{ $value | humanizePercentage }} of requests are %s over %s",
			lns, lname, vals, o->window);
		put_q(out, msg);
		snprintf(
			msg, sizeof(msg),
			"Objective (%s): at most %s%% of requests with %s %s over %s, for %s. From %s (MetricDefinition %s).",
			sc, pct, c->err_label, vals, o->window, o->forv, fam,
			def->obj_name);
	} else {
		bool secs = prom_names__unit(def->unit, def->instrument, unitw,
					     sizeof(unitw)) > 0 &&
			    !strcmp(unitw, "seconds");
		char pq[40], usfx[80];

		num(pq, sizeof(pq), o->quantile * 100);
		if (secs)
			snprintf(usfx, sizeof(usfx), "s");
		else if (def->unit && *def->unit && strcmp(def->unit, "1"))
			snprintf(usfx, sizeof(usfx), " %s", def->unit);
		else
			usfx[0] = 0;
		snprintf(
			msg, sizeof(msg),
			"HTTPRoute {{ $labels.%s }}/{{ $labels.%s }}: p%s latency {{ $value | humanize }}%s over %s",
			lns, lname, pq, usfx, o->window);
		put_q(out, msg);
		snprintf(
			msg, sizeof(msg),
			"Objective (%s): p%s at most %s%s over %s, for %s. From %s_bucket (MetricDefinition %s).",
			sc, pq, th, secs ? "s" : usfx, o->window, o->forv, fam,
			def->obj_name);
	}
	fprintf(out, "\n%s    description: ", ind);
	put_q(out, msg);
	fputc('\n', out);
	return 0;
}

int tr_alerts__rules(FILE *out, struct contract *c, struct tr_plan *plans,
		     size_t n, const struct tr_opts *o, struct tr_report *rep,
		     char *err, size_t errlen)
{
	struct al_cfg cfg = { .file = o->alerts_config
					      ? o->alerts_config
					      : "the built-in alert defaults" };
	struct al_err e = { err, errlen, cfg.file };
	struct metric_def *defs[OBJ_N] = { 0 };
	struct doc_file *df = NULL;
	const char *ind;
	int ret = 0;

	cfg.scopes = calloc(1, sizeof(*cfg.scopes));
	if (!cfg.scopes)
		return -ENOMEM;
	defaults(&cfg);
	if (o->alerts_config) {
		ret = doc__parse_file(o->alerts_config, &df, err, errlen);
		if (ret)
			goto out;
		if (df->ndocs > 1) {
			ret = fail(
				&e, df->docs[1],
				"one YAML document expected; remove the \"---\"");
			goto out;
		}
		if (df->ndocs && df->docs[0]->kind != DOC_NULL &&
		    ((ret = parse_top(&e, df->docs[0], &cfg)) ||
		     (ret = parse_overrides(&e, df->docs[0], &cfg))))
			goto out;
	}
	if (!cfg.err_values) {
		cfg.err_values = calloc(1, sizeof(*cfg.err_values));
		if (!cfg.err_values) {
			ret = -ENOMEM;
			goto out;
		}
		cfg.err_values[0] = default_err_values[0];
		cfg.nerr_values = 1;
	}
	if ((ret = check_defs(&e, c, &cfg, defs)))
		goto out;
	ind = tr_prom__header(out, o);
	for (int w = 0; w < OBJ_N; w++) {
		char rind[16];

		if (!defs[w])
			continue;
		fprintf(out, "%s- name: milometer/alerts/%s\n%s  rules:\n", ind,
			obj_key[w], ind);
		snprintf(rind, sizeof(rind), "%s  ", ind);
		for (size_t i = 0; i < cfg.nscopes && !ret; i++)
			if (cfg.scopes[i].obj[w].enabled)
				ret = put_alert(out, rind, &cfg, i, w, defs[w]);
	}
	for (size_t i = 0; i < n && !ret; i++) {
		const char *tm = plans[i].def->name;
		bool reads[OBJ_N];

		for (int w = 0; w < OBJ_N; w++)
			reads[w] = defs[w] && !strcmp(tm, defs[w]->name);
		if (plans[i].pol->type == MP_DATA_PLANE &&
		    (reads[OBJ_ERR] || reads[OBJ_LAT]))
			report__add(rep, plans[i].pol->obj_name, true,
				    "alerting rules %s over its target %s",
				    reads[OBJ_ERR] ? obj_alert[OBJ_ERR]
						   : obj_alert[OBJ_LAT],
				    tm);
		else
			report__na(
				rep, plans[i].pol->obj_name,
				"no alert objective reads its target metric");
	}
out:
	for (int w = 0; w < OBJ_N; w++)
		if (defs[w])
			crd_definition__put(defs[w]);
	free(cfg.err_values);
	free(cfg.scopes);
	doc__free_file(df);
	return ret;
}
