// SPDX-License-Identifier: Apache-2.0
/*
 * translate_oracle: the expected values of a translation, computed by the
 * agent's own policy engine. It feeds deterministic requests (latencies on
 * and between Envoy's bucket bounds) for every given route through the
 * engine exactly as the aggregator does (source series + bindings), exposes
 * the store as Prometheus text or OpenMetrics, and writes a
 * `promtool test rules` file: the source families as input_series, every
 * target series the engine produced as expected samples. _sum values are
 * compared rounded to 1e-6 (Prometheus's own round()): the engine sums
 * a*v per request, a rule a*sum(v), equal up to the last bits.
 *
 *   translate_oracle --manifests PATH... --rules FILE --route NS/NAME...
 *                    [--gateway NAME] [--format openmetrics|text] -o TEST.yml
 *   translate_oracle --manifests PATH... --route NS/NAME... --otlp-out PREFIX
 *   translate_oracle --manifests PATH... --route NS/NAME... --exposition FILE
 *
 * --otlp-out: two rounds of requests instead, each exported as the agent's
 * OTLP push would (sources cumulative, targets in their definitions'
 * temporality): PREFIX-src-N.pb (the envoy.* sources) and PREFIX-tgt-N.pb
 * (the targets the engine computed), N = 1, 2.
 *
 * --exposition: the store after the same requests, sources and targets, as
 * a scrape would read it (--format), for a Prometheus to scrape.
 */
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/metric_store.h"
#include "exporter/otlp_encode.h"
#include "exporter/prom_text.h"
#include "policy/contract/contract.h"
#include "policy/contract/policy_engine.h"
#include "policy/source/source_catalogue.h"
#include "policy/source/manifest_source.h"

#define NOW 1700000000000000000ull

static const double lat_ms[] = { 0.5,   1,     3.7, 250,    1000, 2600,
				 0.125, 42.42, 5,   600000, 7.25 };

/* Prometheus round(v, to): what the rule side computes. */
static double prom_round(double v, double to)
{
	double inv = 1.0 / to;

	return floor(v * inv + 0.5) / inv;
}

static void put_sq(FILE *f, const char *s, size_t n)
{
	fputc('\'', f);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\'')
			fputc('\'', f);
		fputc(s[i], f);
	}
	fputc('\'', f);
}

static void feed(struct policy_engine *e, struct mstore *st, const int *ids,
		 const struct cel_attr *a, size_t na, unsigned seed)
{
	struct mlabel ml[12];
	struct mseries *tot[2], *tim[2];
	struct pe_binding *bt[2], *bm[2];

	for (size_t i = 0; i < na; i++)
		ml[i] = (struct mlabel){ a[i].key, a[i].value };
	for (int leg = 0; leg < 2; leg++) {
		const char *tn = source_catalogue__metrics[leg ? 2 : 0].name;
		const char *mn = source_catalogue__metrics[leg ? 3 : 1].name;

		tot[leg] = mstore__series(st, ids[leg ? 2 : 0], ml, na);
		tim[leg] = mstore__series(st, ids[leg ? 3 : 1], ml, na);
		policy_engine__bind(e, tn, a, na, &bt[leg]);
		policy_engine__bind(e, mn, a, na, &bm[leg]);
	}
	for (unsigned k = 0; k < 3 + seed % 5; k++)
		for (int leg = 0; leg < 2; leg++) {
			double v = lat_ms[(seed * 7 + k * 3 + leg) %
					  (sizeof(lat_ms) / sizeof(lat_ms[0]))];

			mseries__add(tot[leg], 1, NOW);
			mseries__observe(tim[leg], v, NOW);
			if (bt[leg])
				pe_binding__record(bt[leg], 1, NOW);
			if (bm[leg])
				pe_binding__record(bm[leg], v, NOW);
		}
	/* the bindings stay: freeing them is the store's business at exit */
}

struct split {
	struct otlp_encoder *src, *tgt;
};

static int split_fn(void *ctx, const struct mmetric_desc *d,
		    const struct mpoint_view *p, size_t n)
{
	struct split *sp = ctx;

	return otlp_encoder__add(
		strncmp(d->name, "envoy.", 6) ? sp->tgt : sp->src, d, p, n);
}

static int write_body(struct otlp_encoder *e, const char *prefix,
		      const char *what, int round)
{
	char path[1024];
	void *buf = NULL;
	size_t len = 0;
	FILE *f;
	int n = otlp_encoder__finish(e, &buf, &len);

	if (n < 0)
		return n;
	snprintf(path, sizeof(path), "%s-%s-%d.pb", prefix, what, round);
	f = fopen(path, "w");
	if (!f || (len && fwrite(buf, 1, len, f) != len) || fclose(f))
		return -1;
	free(buf);
	return 0;
}

static void feed_all(struct policy_engine *e, struct mstore *st, const int *ids,
		     const char *const *routes, size_t nr, const char *gw,
		     unsigned *seed);

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "manifests", required_argument, NULL, 'm' },
		{ "rules", required_argument, NULL, 'r' },
		{ "route", required_argument, NULL, 'R' },
		{ "gateway", required_argument, NULL, 'g' },
		{ "format", required_argument, NULL, 'f' },
		{ "output", required_argument, NULL, 'o' },
		{ "otlp-out", required_argument, NULL, 'O' },
		{ "exposition", required_argument, NULL, 'E' },
		{ NULL, 0, NULL, 0 },
	};
	const char *paths[32], *routes[32], *rules = NULL, *out = NULL,
					    *gw = NULL, *otlp_out = NULL,
					    *expo = NULL;
	size_t np = 0, nr = 0;
	enum prom_format fmt = PROM_FMT_OPENMETRICS;
	struct manifest_source *src;
	struct contract *c;
	struct mstore *st;
	struct policy_engine *e;
	char err[512], *buf = NULL, *line, *save, *ibuf = NULL, *ebuf = NULL;
#define MAX_LINES 100000
	static char *lines[MAX_LINES];
	size_t len = 0, ilen = 0, elen = 0, nlines = 0;
	FILE *in, *exp;
	int ids[4], opt;
	unsigned seed = 1;
	FILE *f, *o;

	while ((opt = getopt_long(argc, argv, "m:r:R:g:f:o:O:E:", opts,
				  NULL)) != -1) {
		switch (opt) {
		case 'm':
			if (np < 32)
				paths[np++] = optarg;
			break;
		case 'r':
			rules = optarg;
			break;
		case 'R':
			if (nr < 32)
				routes[nr++] = optarg;
			break;
		case 'g':
			gw = optarg;
			break;
		case 'f':
			fmt = strcmp(optarg, "text") ? PROM_FMT_OPENMETRICS
						     : PROM_FMT_TEXT;
			break;
		case 'o':
			out = optarg;
			break;
		case 'O':
			otlp_out = optarg;
			break;
		case 'E':
			expo = optarg;
			break;
		default:
			return 2;
		}
	}
	if (!np || !nr || (!otlp_out && !expo && (!rules || !out))) {
		fprintf(stderr,
			"usage: translate_oracle --manifests PATH --rules FILE --route NS/NAME... -o FILE\n");
		return 2;
	}
	src = manifest_source__open_paths(paths, np, err, sizeof(err));
	if (!src) {
		fprintf(stderr, "translate_oracle: %s\n", err);
		return 2;
	}
	c = contract__new();
	/* keep_delta: what the agent does when it exports OTLP */
	st = mstore__new(&(struct mstore_opts){ .keep_delta = true });
	e = policy_engine__new(st, c);
	if (!e || contract__load(c, src) || policy_engine__sync(e, src) < 0)
		return 1;
	for (int i = 0; i < 4; i++) {
		const struct source_metric *sm = &source_catalogue__metrics[i];
		struct mmetric_desc d = {
			.name = sm->name,
			.description = sm->description,
			.unit = sm->unit,
			.instrument = sm->instrument,
			.is_int = sm->instrument == MI_COUNTER,
			.hist = MH_EXPLICIT,
			.bounds = sm->bounds,
			.nbounds = sm->nbounds,
		};

		ids[i] = mstore__add_metric(st, &d);
		if (ids[i] < 0)
			return 1;
	}
	if (otlp_out) {
		for (int round = 1; round <= 2; round++) {
			struct otlp_encode_opts eo = { 0 };
			struct split sp = { otlp_encoder__new(&eo),
					    otlp_encoder__new(&eo) };

			feed_all(e, st, ids, routes, nr, gw, &seed);
			if (!sp.src || !sp.tgt ||
			    mstore__collect(st, MT_DELTA,
					    NOW + round * 1000000000ull,
					    split_fn, &sp) < 0 ||
			    write_body(sp.src, otlp_out, "src", round) ||
			    write_body(sp.tgt, otlp_out, "tgt", round))
				return 1;
			otlp_encoder__free(sp.src);
			otlp_encoder__free(sp.tgt);
		}
		return 0;
	}
	feed_all(e, st, ids, routes, nr, gw, &seed);
	if (expo) {
		f = fopen(expo, "w");
		if (!f || prom_text__write(f, st, fmt, NOW) || fclose(f))
			return 1;
		return 0;
	}
	f = open_memstream(&buf, &len);
	if (!f || prom_text__write(f, st, fmt, NOW) || fclose(f))
		return 1;
	o = fopen(out, "w");
	in = open_memstream(&ibuf, &ilen);
	exp = open_memstream(&ebuf, &elen);
	if (!o || !in || !exp)
		return 2;
	fprintf(o,
		"# generated by translate_oracle from the policy engine\n"
		"rule_files: [%s]\nevaluation_interval: 1m\ntests:\n"
		"- interval: 1m\n  input_series:\n",
		rules);
	/*
	 * Sources in; per target family one expression listing every series
	 * the engine produced: promtool compares the whole set, so a missing
	 * or an extra series fails as much as a wrong value.
	 */
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save))
		if (nlines < MAX_LINES)
			lines[nlines++] = line;
	for (size_t i = 0; i < nlines; i++) {
		char *sp = strrchr(lines[i], ' ');
		size_t nl = sp ? (size_t)(sp - lines[i]) : 0;

		if (lines[i][0] == '#' || !sp || strncmp(lines[i], "envoy_", 6))
			continue;
		fputs("  - series: ", in);
		put_sq(in, lines[i], nl);
		fprintf(in, "\n    values: '%sx10'\n", sp + 1);
	}
	for (size_t i = 0; i < nlines; i++) {
		const char *l = lines[i];
		size_t base = strcspn(l, "{ ");
		bool sum = base > 4 && !strncmp(l + base - 4, "_sum", 4);
		bool seen = false;

		if (l[0] == '#' || !strncmp(l, "envoy_", 6) || !l[base] ||
		    (base > 8 && !strncmp(l + base - 8, "_created", 8)))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = !strncmp(lines[j], l, base) &&
			       strchr("{ ", lines[j][base]);
		if (seen)
			continue;
		fprintf(exp,
			sum ? "  - expr: 'round(%.*s, 0.000001)'"
			    : "  - expr: '%.*s'",
			(int)base, l);
		fputs("\n    eval_time: 5m\n    exp_samples:\n", exp);
		for (size_t j = i; j < nlines; j++) {
			const char *m = lines[j];
			const char *sp = strrchr(m, ' ');
			size_t nl = sp ? (size_t)(sp - m) : 0;
			double v;

			if (strncmp(m, l, base) || !strchr("{ ", m[base]) ||
			    !sp)
				continue;
			v = strtod(sp + 1, NULL);
			fputs("    - labels: ", exp);
			if (sum)
				put_sq(exp, m[base] == '{' ? m + base : "{}",
				       m[base] == '{' ? nl - base : 2);
			else
				put_sq(exp, m, nl);
			fprintf(exp, "\n      value: %.17g\n",
				sum ? prom_round(v, 0.000001) : v);
		}
	}
	fclose(in);
	fclose(exp);
	fputs(ibuf, o);
	fputs("  promql_expr_test:\n", o);
	fputs(ebuf, o);
	free(ibuf);
	free(ebuf);
	fclose(o);
	free(buf);
	return 0;
}

static void feed_all(struct policy_engine *e, struct mstore *st, const int *ids,
		     const char *const *routes, size_t nr, const char *gw,
		     unsigned *seedp)
{
	unsigned seed = *seedp;

	mstore__lock(st);
	for (size_t r = 0; r < nr; r++) {
		static const char *const methods[] = { "GET", "POST" };
		static const char *const codes[] = { "200", "404", "503" };
		char ns[128], name[128], cluster[300];

		if (sscanf(routes[r], "%127[^/]/%127s", ns, name) != 2)
			continue;
		for (int rule = 0; rule < 2; rule++)
			for (int m = 0; m < 2; m++)
				for (int s = 0; s < 3; s++) {
					char cls[4] = { codes[s][0], 'x', 'x',
							0 };
					struct cel_attr a[8];
					size_t na = 0;

					snprintf(cluster, sizeof(cluster),
						 "httproute/%s/%s/rule/%d", ns,
						 name, rule);
					a[na++] = (struct cel_attr){
						"k8s.httproute.name", name
					};
					a[na++] = (struct cel_attr){
						"k8s.namespace.name", ns
					};
					if (gw)
						a[na++] = (struct cel_attr){
							"k8s.gateway.name", gw
						};
					a[na++] = (struct cel_attr){
						"envoy.cluster_name", cluster
					};
					a[na++] = (struct cel_attr){
						"http.request.method",
						methods[m]
					};
					a[na++] = (struct cel_attr){
						"http.response.status_code",
						codes[s]
					};
					a[na++] = (struct cel_attr){
						"http.response.status_code_class",
						cls
					};
					feed(e, st, ids, a, na, seed++);
				}
	}
	{ /* no route: selected by no subject */
		struct cel_attr a[] = {
			{ "k8s.httproute.name", "unmatched" },
			{ "http.request.method", "GET" },
			{ "http.response.status_code", "404" },
			{ "http.response.status_code_class", "4xx" },
		};

		feed(e, st, ids, a, 4, seed++);
	}
	mstore__unlock(st);
	*seedp = seed;
}
