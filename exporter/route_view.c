// SPDX-License-Identifier: Apache-2.0
/* The per-route view: see route_view.h. */
#include <curl/curl.h>
#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exporter/route_view.h"
#include "policy/util/json_out.h"
#include "policy/model/metric_store.h"

void rt_snap__reset(struct rt_snap *s)
{
	s->n = 0;
	s->t = 0;
}

void rt_snap__free(struct rt_snap *s)
{
	free(s->rows);
	memset(s, 0, sizeof(*s));
}

struct rt_row *rt_snap__row(struct rt_snap *s, const char *ns,
			    const char *route, int rule, enum rt_leg leg)
{
	struct rt_row *r;

	ns = ns ? ns : "";
	route = route ? route : "";
	for (size_t i = 0; i < s->n; i++) {
		r = &s->rows[i];
		if (r->rule == rule && r->leg == leg && !strcmp(r->ns, ns) &&
		    !strcmp(r->route, route))
			return r;
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		struct rt_row *n = realloc(s->rows, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->rows = n;
		s->cap = cap;
	}
	r = &s->rows[s->n++];
	memset(r, 0, sizeof(*r));
	snprintf(r->ns, sizeof(r->ns), "%s", ns);
	snprintf(r->route, sizeof(r->route), "%s", route);
	r->rule = rule;
	r->leg = leg;
	r->rate = NAN;
	return r;
}

int rt_row__add_bucket(struct rt_row *r, double le, double count)
{
	for (size_t i = 0; i < r->nb; i++) {
		if (r->b[i].upper == le) {
			r->b[i].count += count;
			return 0;
		}
	}
	if (r->nb == RT_MAX_BUCKETS)
		return -E2BIG;
	r->b[r->nb++] = (struct hist_bucket){ le, count };
	return 0;
}

int rt_snap__rule_of_cluster(const char *cluster)
{
	const char *p = cluster ? strstr(cluster, "/rule/") : NULL;
	char *end;
	long v;

	if (!p)
		return -1;
	v = strtol(p + 6, &end, 10);
	return end == p + 6 || *end || v < 0 ? -1 : (int)v;
}

static const struct {
	const char *name;
	enum rt_leg leg;
	bool hist;
} sources[] = {
	{ "envoy.http.downstream_rq_total", RT_DOWNSTREAM, false },
	{ "envoy.http.downstream_rq_time", RT_DOWNSTREAM, true },
	{ "envoy.cluster.upstream_rq_total", RT_UPSTREAM, false },
	{ "envoy.cluster.upstream_rq_time", RT_UPSTREAM, true },
};

static const char *label(const struct mpoint_view *p, const char *key)
{
	for (size_t i = 0; i < p->nlabels; i++)
		if (!strcmp(p->labels[i].key, key))
			return p->labels[i].value;
	return NULL;
}

static int visit(void *ctx, const struct mmetric_desc *d,
		 const struct mpoint_view *pts, size_t n)
{
	struct rt_snap *s = ctx;
	size_t k;

	for (k = 0; k < sizeof(sources) / sizeof(sources[0]); k++)
		if (!strcmp(d->name, sources[k].name))
			break;
	if (k == sizeof(sources) / sizeof(sources[0]))
		return 0;
	for (size_t i = 0; i < n; i++) {
		const struct mpoint_view *p = &pts[i];
		const char *cls = label(p, "http.response.status_code_class");
		const char *ab = label(p, "milometer.aborted");
		struct rt_row *r =
			rt_snap__row(s, label(p, "k8s.namespace.name"),
				     label(p, "k8s.httproute.name"),
				     rt_snap__rule_of_cluster(
					     label(p, "envoy.cluster_name")),
				     sources[k].leg);

		if (!r)
			return -ENOMEM;
		if (!sources[k].hist) {
			double v = d->is_int ? (double)p->ivalue : p->value;

			r->requests += v;
			if (!(cls && !strcmp(cls, "5xx")) &&
			    !(ab && !strcmp(ab, "true")))
				r->ok += v;
			continue;
		}
		if (p->explicit_h) {
			const struct mhist_explicit_view *h = p->explicit_h;
			double cum = 0;

			for (size_t b = 0; b <= h->nbounds; b++) {
				cum += h->counts[b];
				if (rt_row__add_bucket(r,
						       b < h->nbounds
							       ? h->bounds[b]
							       : INFINITY,
						       cum))
					return -E2BIG;
			}
		}
	}
	return 0;
}

int rt_snap__from_store(struct rt_snap *s, struct mstore *store,
			uint64_t now_ns)
{
	rt_snap__reset(s);
	s->t = now_ns / 1e9;
	return mstore__collect(store, MT_CUMULATIVE, now_ns, visit, s);
}

static const char *leg_name(enum rt_leg leg)
{
	return leg == RT_UPSTREAM ? "upstream" : "downstream";
}

static void write_key(FILE *out, const struct rt_row *r)
{
	json_out__key(out, "namespace");
	json_out__str(out, r->ns);
	fputs(",\"route\":", out);
	json_out__str(out, r->route);
	fputs(",\"rule\":", out);
	if (r->rule < 0)
		fputs("null", out);
	else
		fprintf(out, "%d", r->rule);
	fprintf(out, ",\"leg\":\"%s\"", leg_name(r->leg));
}

void rt_snap__write_json(FILE *out, const struct rt_snap *s)
{
	fputs("{\"time\":", out);
	json_out__double(out, s->t);
	fputs(",\"rows\":[", out);
	for (size_t i = 0; i < s->n; i++) {
		const struct rt_row *r = &s->rows[i];

		fputs(i ? ",{" : "{", out);
		write_key(out, r);
		fputs(",\"requests\":", out);
		json_out__double(out, r->requests);
		fputs(",\"ok\":", out);
		json_out__double(out, r->ok);
		fputs(",\"rate\":", out);
		json_out__double(out, r->rate);
		fputs(",\"buckets\":[", out);
		for (size_t b = 0; b < r->nb; b++) {
			fputs(b ? ",[" : "[", out);
			if (isinf(r->b[b].upper))
				fputs("\"+Inf\"", out);
			else
				json_out__double(out, r->b[b].upper);
			fputc(',', out);
			json_out__double(out, r->b[b].count);
			fputc(']', out);
		}
		fputs("]}", out);
	}
	fputs("]}\n", out);
}

static double num(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !v)
		return NAN;
	if (json_object_is_type(v, json_type_string))
		return strtod(json_object_get_string(v), NULL);
	return json_object_get_double(v);
}

static const char *str(struct json_object *o, const char *key)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return "";
	return json_object_get_string(v);
}

int rt_snap__parse_json(struct rt_snap *s, const char *json, char *err,
			size_t errlen)
{
	struct json_object *root = json_tokener_parse(json), *rows;
	int ret = -EINVAL;

	rt_snap__reset(s);
	if (!root || !json_object_object_get_ex(root, "rows", &rows) ||
	    !json_object_is_type(rows, json_type_array)) {
		snprintf(err, errlen,
			 "%s:%d: the answer is not a top snapshot "
			 "(an agent older than this client?): %.80s",
			 __FILE__, __LINE__, json);
		goto out;
	}
	s->t = num(root, "time");
	for (size_t i = 0; i < json_object_array_length(rows); i++) {
		struct json_object *o = json_object_array_get_idx(rows, i), *bk;
		double rule = num(o, "rule");
		struct rt_row *r = rt_snap__row(
			s, str(o, "namespace"), str(o, "route"),
			isnan(rule) ? -1 : (int)rule,
			strcmp(str(o, "leg"), "upstream") ? RT_DOWNSTREAM
							  : RT_UPSTREAM);

		if (!r) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			goto out;
		}
		r->requests = num(o, "requests");
		r->ok = num(o, "ok");
		r->rate = num(o, "rate");
		if (!json_object_object_get_ex(o, "buckets", &bk) ||
		    !json_object_is_type(bk, json_type_array))
			continue;
		for (size_t b = 0; b < json_object_array_length(bk); b++) {
			struct json_object *pair =
				json_object_array_get_idx(bk, b);
			struct json_object *le =
				json_object_array_get_idx(pair, 0);
			struct json_object *c =
				json_object_array_get_idx(pair, 1);

			if (!le || !c)
				continue;
			rt_row__add_bucket(
				r,
				json_object_is_type(le, json_type_string)
					? strtod(json_object_get_string(le),
						 NULL)
					: json_object_get_double(le),
				json_object_get_double(c));
		}
	}
	ret = 0;
out:
	json_object_put(root);
	return ret;
}

int rt_sort__parse(const char *s, enum rt_sort *out)
{
	static const char *const names[] = {
		[RT_SORT_ROUTE] = "route",       [RT_SORT_RPS] = "rps",
		[RT_SORT_SUCCESS] = "success",   [RT_SORT_P50] = "p50",
		[RT_SORT_P95] = "p95",           [RT_SORT_P99] = "p99",
		[RT_SORT_REQUESTS] = "requests",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!strcmp(s, names[i])) {
			*out = (enum rt_sort)i;
			return 0;
		}
	}
	return -EINVAL;
}

static const struct rt_row *find(const struct rt_snap *s,
				 const struct rt_row *k)
{
	for (size_t i = 0; s && i < s->n; i++) {
		const struct rt_row *r = &s->rows[i];

		if (r->rule == k->rule && r->leg == k->leg &&
		    !strcmp(r->ns, k->ns) && !strcmp(r->route, k->route))
			return r;
	}
	return NULL;
}

static double bucket_at(const struct rt_row *r, double le)
{
	for (size_t i = 0; r && i < r->nb; i++)
		if (r->b[i].upper == le)
			return r->b[i].count;
	return 0;
}

void rt_view__compute(const struct rt_snap *cur, const struct rt_snap *prev,
		      const struct rt_snap *base, struct rt_stat *out)
{
	for (size_t i = 0; i < cur->n; i++) {
		const struct rt_row *r = &cur->rows[i];
		const struct rt_row *p = find(prev, r), *b = find(base, r);
		struct hist_bucket hb[RT_MAX_BUCKETS];
		struct rt_stat *st = &out[i];
		double n, ok;

		/* a counter that went down: the agent restarted, count anew */
		if (b && b->requests > r->requests)
			b = NULL;
		st->row = r;
		st->requests = r->requests;
		n = r->requests - (b ? b->requests : 0);
		ok = r->ok - (b ? b->ok : 0);
		st->window_requests = n;
		if (!isnan(r->rate))
			st->rps = r->rate;
		else if (prev && cur->t > prev->t)
			st->rps =
				(r->requests - (p && p->requests <= r->requests
							? p->requests
							: 0)) /
				(cur->t - prev->t);
		else
			st->rps = NAN;
		st->success = n > 0 ? ok / n : NAN;
		for (size_t k = 0; k < r->nb; k++)
			hb[k] = (struct hist_bucket){
				r->b[k].upper,
				r->b[k].count - bucket_at(b, r->b[k].upper),
			};
		st->p50 = hist_quantile__compute(0.50, hb, r->nb);
		st->p95 = hist_quantile__compute(0.95, hb, r->nb);
		st->p99 = hist_quantile__compute(0.99, hb, r->nb);
	}
}

static enum rt_sort sort_key;

/* NaN (no figure) sorts last whatever the direction. */
static int cmp_num(double a, double b, bool ascending)
{
	if (isnan(a) || isnan(b))
		return isnan(a) - isnan(b);
	if (a == b)
		return 0;
	return (a < b) == ascending ? -1 : 1;
}

static int cmp_route(const struct rt_stat *x, const struct rt_stat *y)
{
	const struct rt_row *a = x->row, *b = y->row;
	int c = strcmp(a->ns, b->ns);

	if (!c)
		c = strcmp(a->route, b->route);
	if (!c)
		c = a->rule - b->rule;
	if (!c)
		c = (int)a->leg - (int)b->leg;
	return c;
}

static int cmp_stat(const void *pa, const void *pb)
{
	const struct rt_stat *a = pa, *b = pb;
	int c = 0;

	switch (sort_key) {
	case RT_SORT_ROUTE:
		break;
	case RT_SORT_RPS:
		c = cmp_num(a->rps, b->rps, false);
		break;
	case RT_SORT_SUCCESS:
		c = cmp_num(a->success, b->success, true);
		break;
	case RT_SORT_P50:
		c = cmp_num(a->p50, b->p50, false);
		break;
	case RT_SORT_P95:
		c = cmp_num(a->p95, b->p95, false);
		break;
	case RT_SORT_P99:
		c = cmp_num(a->p99, b->p99, false);
		break;
	case RT_SORT_REQUESTS:
		c = cmp_num(a->requests, b->requests, false);
		break;
	}
	return c ? c : cmp_route(a, b);
}

void rt_view__sort(struct rt_stat *st, size_t n, enum rt_sort key)
{
	sort_key = key;
	qsort(st, n, sizeof(*st), cmp_stat);
}

static void cell(FILE *out, double v, const char *fmt, double scale,
		 const char *unit)
{
	char buf[32];

	if (isnan(v))
		snprintf(buf, sizeof(buf), "-");
	else
		snprintf(buf, sizeof(buf), fmt, v * scale, unit);
	fprintf(out, " %9s", buf);
}

void rt_view__write_table(FILE *out, const struct rt_stat *st, size_t n)
{
	fprintf(out, "%-40s %4s %-4s %9s %9s %9s %9s %9s %9s\n", "ROUTE",
		"RULE", "LEG", "RPS", "SUCCESS", "P50", "P95", "P99",
		"REQUESTS");
	for (size_t i = 0; i < n; i++) {
		const struct rt_row *r = st[i].row;
		char name[400], rule[16];

		snprintf(name, sizeof(name), "%s%s%s", r->ns,
			 r->ns[0] ? "/" : "", r->route);
		snprintf(rule, sizeof(rule), r->rule < 0 ? "-" : "%d", r->rule);
		fprintf(out, "%-40.40s %4s %-4s", name, rule,
			r->leg == RT_UPSTREAM ? "up" : "down");
		cell(out, st[i].rps, "%.1f%s", 1, "");
		cell(out, st[i].success, "%.2f%s", 100, "%");
		cell(out, st[i].p50, "%.1f%s", 1, "ms");
		cell(out, st[i].p95, "%.1f%s", 1, "ms");
		cell(out, st[i].p99, "%.1f%s", 1, "ms");
		fprintf(out, " %9.0f\n", st[i].requests);
	}
}

void rt_view__write_json(FILE *out, const struct rt_stat *st, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		const struct rt_row *r = st[i].row;

		fputs(i ? ",{" : "{", out);
		write_key(out, r);
		fputs(",\"requests\":", out);
		json_out__double(out, st[i].requests);
		fputs(",\"window_requests\":", out);
		json_out__double(out, st[i].window_requests);
		fputs(",\"rps\":", out);
		json_out__double(out, st[i].rps);
		fputs(",\"success_rate\":", out);
		json_out__double(out, st[i].success);
		fputs(",\"p50_ms\":", out);
		json_out__double(out, st[i].p50);
		fputs(",\"p95_ms\":", out);
		json_out__double(out, st[i].p95);
		fputs(",\"p99_ms\":", out);
		json_out__double(out, st[i].p99);
		fputc('}', out);
	}
	fputs("]\n", out);
}

static struct rt_snap *nth(const struct rt_history *h, size_t k)
{
	/* k = 0: the oldest kept */
	return (struct rt_snap *)&h
		->ring[(h->head + RT_HISTORY - h->count + k) % RT_HISTORY];
}

void rt_history__add(struct rt_history *h, struct rt_snap *snap)
{
	struct rt_snap *slot;

	if (h->count && snap->t - nth(h, h->count - 1)->t < 1.0)
		return;
	slot = &h->ring[h->head];
	rt_snap__free(slot);
	*slot = *snap;
	memset(snap, 0, sizeof(*snap));
	h->head = (h->head + 1) % RT_HISTORY;
	if (h->count < RT_HISTORY)
		h->count++;
}

void rt_history__free(struct rt_history *h)
{
	for (size_t i = 0; i < RT_HISTORY; i++)
		rt_snap__free(&h->ring[i]);
	h->head = h->count = 0;
}

void rt_history__write_json(const struct rt_history *h, FILE *out,
			    double window_s)
{
	const struct rt_snap *cur = h->count ? nth(h, h->count - 1) : NULL;
	const struct rt_snap *prev = h->count > 1 ? nth(h, h->count - 2) : NULL;
	const struct rt_snap *base = NULL;
	struct rt_stat *st = NULL, *pst = NULL;

	fputs("{\"time\":", out);
	json_out__double(out, cur ? cur->t : NAN);
	for (size_t k = 0; cur && k + 1 < h->count && window_s > 0; k++) {
		if (cur->t - nth(h, k)->t <= window_s + 0.5) {
			base = nth(h, k);
			break;
		}
	}
	fputs(",\"window_s\":", out);
	json_out__double(out, base ? cur->t - base->t : NAN);
	fputs(",\"rows\":", out);
	if (cur && cur->n && (st = calloc(cur->n, sizeof(*st)))) {
		rt_view__compute(cur, prev, base, st);
		rt_view__sort(st, cur->n, RT_SORT_ROUTE);
		rt_view__write_json(out, st, cur->n);
	} else {
		fputs("[]", out);
	}
	/* per interval: requests/s and p95 of what arrived in it */
	fputs(",\"history\":{\"t\":[", out);
	for (size_t k = 1; k < h->count; k++) {
		fputs(k > 1 ? "," : "", out);
		json_out__double(out, nth(h, k)->t);
	}
	fputs("],\"rows\":[", out);
	for (size_t i = 0; st && i < cur->n; i++) {
		const struct rt_row *r = st[i].row;

		fputs(i ? ",{" : "{", out);
		write_key(out, r);
		for (int f = 0; f < 2; f++) {
			fputs(f ? "],\"p95_ms\":[" : ",\"rps\":[", out);
			for (size_t k = 1; k < h->count; k++) {
				const struct rt_snap *a = nth(h, k - 1),
						     *b = nth(h, k);
				struct rt_snap one = { .t = b->t, .n = 1 };
				const struct rt_row *rb = find(b, r);
				struct rt_stat s1;

				fputs(k > 1 ? "," : "", out);
				if (!rb) {
					fputs("null", out);
					continue;
				}
				one.rows = (struct rt_row *)rb;
				rt_view__compute(&one, a, a, &s1);
				json_out__double(out, f ? s1.p95 : s1.rps);
			}
		}
		fputs("]}", out);
	}
	fputs("]}}\n", out);
	free(st);
	free(pst);
}

static double real_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static size_t on_body(char *p, size_t sz, size_t n, void *ctx)
{
	return fwrite(p, sz, n, ctx) * sz;
}

/* One instant query; the "result" array of the answer, or NULL (err says why). */
static struct json_object *prom_query(CURL *c, const char *base,
				      const char *query, char *err,
				      size_t errlen)
{
	char *q = curl_easy_escape(c, query, 0), *url = NULL, *body = NULL;
	struct json_object *root = NULL, *data, *res = NULL, *st;
	size_t blen = 0;
	long code = 0;
	FILE *f;
	CURLcode rc;

	if (!q || asprintf(&url, "%s%s/api/v1/query?query=%s", base,
			   base[strlen(base) - 1] == '/' ? "" : "", q) < 0) {
		curl_free(q);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (base[strlen(base) - 1] == '/')
		url[strlen(base) - 1] = '/'; /* one slash before "api" */
	curl_free(q);
	f = open_memstream(&body, &blen);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
	curl_easy_setopt(c, CURLOPT_TIMEOUT, 10L);
	rc = curl_easy_perform(c);
	fclose(f);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	if (rc != CURLE_OK || code != 200) {
		snprintf(err, errlen,
			 "--prometheus-url %s: %s (HTTP %ld): %.200s", base,
			 rc != CURLE_OK ? curl_easy_strerror(rc)
					: "query failed",
			 code, body ? body : "");
		goto out;
	}
	root = json_tokener_parse(body);
	if (!root || !json_object_object_get_ex(root, "status", &st) ||
	    strcmp(json_object_get_string(st), "success") ||
	    !json_object_object_get_ex(root, "data", &data) ||
	    !json_object_object_get_ex(data, "result", &res)) {
		snprintf(
			err, errlen,
			"--prometheus-url %s: not a Prometheus query API answer: %.200s",
			base, body ? body : "");
		res = NULL;
		goto out;
	}
	res = json_object_get(res);
out:
	json_object_put(root);
	free(body);
	free(url);
	return res;
}

static const char *mlabel_of(struct json_object *metric, const char *key)
{
	struct json_object *v;

	return json_object_object_get_ex(metric, key, &v)
		       ? json_object_get_string(v)
		       : "";
}

enum { PQ_REQUESTS, PQ_OK, PQ_RATE, PQ_BUCKETS };

/* Add one query's vector into the snapshot's rows. */
static void prom_merge(struct rt_snap *snap, struct json_object *res,
		       enum rt_leg leg, int what)
{
	for (size_t i = 0; i < json_object_array_length(res); i++) {
		struct json_object *s = json_object_array_get_idx(res, i);
		struct json_object *m, *val;
		struct rt_row *r;
		double v;

		if (!json_object_object_get_ex(s, "metric", &m) ||
		    !json_object_object_get_ex(s, "value", &val))
			continue;
		v = strtod(json_object_get_string(
				   json_object_array_get_idx(val, 1)),
			   NULL);
		r = rt_snap__row(snap, mlabel_of(m, "k8s_namespace_name"),
				 mlabel_of(m, "k8s_httproute_name"),
				 rt_snap__rule_of_cluster(
					 mlabel_of(m, "envoy_cluster_name")),
				 leg);
		if (!r)
			continue;
		switch (what) {
		case PQ_REQUESTS:
			r->requests += v;
			break;
		case PQ_OK:
			r->ok += v;
			break;
		case PQ_RATE:
			r->rate = (isnan(r->rate) ? 0 : r->rate) + v;
			break;
		case PQ_BUCKETS:
			rt_row__add_bucket(r, strtod(mlabel_of(m, "le"), NULL),
					   v);
			break;
		}
	}
}

int rt_snap__from_prometheus(struct rt_snap *snap, const char *url,
			     const char *rate_range, char *err, size_t errlen)
{
	static const char by[] =
		"k8s_namespace_name,k8s_httproute_name,envoy_cluster_name";
	static const struct {
		const char *total, *time;
		enum rt_leg leg;
	} legs[] = {
		{ "envoy_http_downstream_rq_total",
		  "envoy_http_downstream_rq_time_bucket", RT_DOWNSTREAM },
		{ "envoy_cluster_upstream_rq_total",
		  "envoy_cluster_upstream_rq_time_bucket", RT_UPSTREAM },
	};
	CURL *c = curl_easy_init();
	int ret = 0;

	if (!c) {
		snprintf(err, errlen, "libcurl could not start");
		return -ENOMEM;
	}
	rt_snap__reset(snap);
	snap->t = real_s();
	for (size_t l = 0; l < 2 && !ret; l++) {
		char q[4][512];

		snprintf(q[PQ_REQUESTS], sizeof(q[0]), "sum by (%s) (%s)", by,
			 legs[l].total);
		snprintf(
			q[PQ_OK], sizeof(q[0]),
			"sum by (%s) (%s{http_response_status_code_class!=\"5xx\",milometer_aborted!=\"true\"})",
			by, legs[l].total);
		snprintf(q[PQ_RATE], sizeof(q[0]), "sum by (%s) (rate(%s[%s]))",
			 by, legs[l].total, rate_range);
		snprintf(q[PQ_BUCKETS], sizeof(q[0]), "sum by (%s,le) (%s)", by,
			 legs[l].time);
		for (int k = 0; k < 4; k++) {
			struct json_object *res =
				prom_query(c, url, q[k], err, errlen);

			if (!res) {
				ret = -EIO;
				break;
			}
			prom_merge(snap, res, legs[l].leg, k);
			json_object_put(res);
		}
	}
	curl_easy_cleanup(c);
	return ret;
}
