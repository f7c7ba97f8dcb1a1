// SPDX-License-Identifier: Apache-2.0
/*
 * Builds the protoc-c message tree for one ExportMetricsServiceRequest and
 * packs it. Every node of the tree comes from one bump arena that finish()
 * rewinds, so a 10k-series request costs a handful of mallocs and cannot
 * leak per point.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "exporter/otlp_encode.h"
#include "exporter/otlp_pb.h"

#ifndef MM_VERSION
#define MM_VERSION "0.0.0-dev"
#endif

#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	max_align_t data[];
};

struct arena {
	struct arena_chunk *head;
};

struct otlp_encoder {
	struct arena arena;
	/* Resource and scope live outside the arena: they outlast finish(). */
	otlp_pb_kv **res_attrs;
	otlp_pb_kv *res_kv;
	otlp_pb_any *res_any;
	size_t nres;
	char *scope_name, *scope_version;
	otlp_pb_metric **metrics;
	size_t nmetrics, cap_metrics;
	size_t npoints;
};

static void *arena_alloc(struct arena *a, size_t size)
{
	struct arena_chunk *c = a->head;
	void *p;

	size = (size + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (!c || c->size - c->used < size) {
		size_t csize = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = csize;
		c->next = a->head;
		a->head = c;
	}
	p = (char *)c->data + c->used;
	c->used += size;
	return p;
}

/* Keep the newest chunk for the next request, free the rest. */
static void arena_rewind(struct arena *a)
{
	struct arena_chunk *c = a->head, *next;

	if (!c)
		return;
	for (next = c->next; next;) {
		struct arena_chunk *n = next->next;

		free(next);
		next = n;
	}
	c->next = NULL;
	c->used = 0;
}

static void arena_free(struct arena *a)
{
	arena_rewind(a);
	free(a->head);
	a->head = NULL;
}

static char *arena_strdup(struct arena *a, const char *s)
{
	size_t n;
	char *d;

	if (!s || !*s)
		return (char *)protobuf_c_empty_string;
	n = strlen(s) + 1;
	d = arena_alloc(a, n);
	if (d)
		memcpy(d, s, n);
	return d;
}

static void *arena_dup(struct arena *a, const void *p, size_t size)
{
	void *d;

	if (!size)
		return NULL;
	d = arena_alloc(a, size);
	if (d)
		memcpy(d, p, size);
	return d;
}

#define ANEW(a, type, init) ({                                  \
	type *_p = arena_alloc(a, sizeof(type));                \
	if (_p)                                                 \
		*_p = (type)init;                               \
	_p; })

static otlp_pb_kv **attrs_from_labels(struct arena *a,
				      const struct mlabel *labels, size_t n)
{
	otlp_pb_kv **v, *kv;
	otlp_pb_any *any;
	size_t i;

	if (!n)
		return NULL;
	v = arena_alloc(a, n * sizeof(*v));
	kv = arena_alloc(a, n * sizeof(*kv));
	any = arena_alloc(a, n * sizeof(*any));
	if (!v || !kv || !any)
		return NULL;
	for (i = 0; i < n; i++) {
		kv[i] = (otlp_pb_kv)OTLP_PBC(KEY_VALUE__INIT);
		any[i] = (otlp_pb_any)OTLP_PBC(ANY_VALUE__INIT);
		any[i].value_case = OTLP_PBC(ANY_VALUE__VALUE_STRING_VALUE);
		any[i].string_value = arena_strdup(a, labels[i].value);
		kv[i].key = arena_strdup(a, labels[i].key);
		kv[i].value = &any[i];
		if (!kv[i].key || !any[i].string_value)
			return NULL;
		v[i] = &kv[i];
	}
	return v;
}

static int add_number_points(struct arena *a, const struct mmetric_desc *d,
			     const struct mpoint_view *pts, size_t n,
			     otlp_pb_number_dp ***out)
{
	otlp_pb_number_dp **v, *dp;
	size_t i;

	v = arena_alloc(a, n * sizeof(*v));
	dp = arena_alloc(a, n * sizeof(*dp));
	if (!v || !dp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		dp[i] = (otlp_pb_number_dp)OTLP_PBC(NUMBER_DATA_POINT__INIT);
		dp[i].n_attributes = pts[i].nlabels;
		dp[i].attributes = attrs_from_labels(a, pts[i].labels,
						     pts[i].nlabels);
		if (pts[i].nlabels && !dp[i].attributes)
			return -ENOMEM;
		/* Gauges have no start time in the data model. */
		if (d->instrument != MI_GAUGE)
			dp[i].start_time_unix_nano = pts[i].start_ns;
		dp[i].time_unix_nano = pts[i].time_ns;
		if (d->is_int) {
			dp[i].value_case =
				OTLP_PBC(NUMBER_DATA_POINT__VALUE_AS_INT);
			dp[i].as_int = pts[i].ivalue;
		} else {
			dp[i].value_case =
				OTLP_PBC(NUMBER_DATA_POINT__VALUE_AS_DOUBLE);
			dp[i].as_double = pts[i].value;
		}
		v[i] = &dp[i];
	}
	*out = v;
	return 0;
}

static int add_explicit_points(struct arena *a, const struct mmetric_desc *d,
			       const struct mpoint_view *pts, size_t n,
			       otlp_pb_histogram_dp ***out)
{
	otlp_pb_histogram_dp **v, *dp;
	size_t i;

	v = arena_alloc(a, n * sizeof(*v));
	dp = arena_alloc(a, n * sizeof(*dp));
	if (!v || !dp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mpoint_view *p = &pts[i];
		const struct mhist_explicit_view *h = p->explicit_h;

		dp[i] = (otlp_pb_histogram_dp)
			OTLP_PBC(HISTOGRAM_DATA_POINT__INIT);
		dp[i].n_attributes = p->nlabels;
		dp[i].attributes = attrs_from_labels(a, p->labels, p->nlabels);
		if (p->nlabels && !dp[i].attributes)
			return -ENOMEM;
		dp[i].start_time_unix_nano = p->start_ns;
		dp[i].time_unix_nano = p->time_ns;
		dp[i].count = p->count;
		dp[i].opt_sum_case = OTLP_PBC(HISTOGRAM_DATA_POINT__OPT_SUM_SUM);
		dp[i].sum = p->sum;
		if (p->count) {
			dp[i].opt_min_case =
				OTLP_PBC(HISTOGRAM_DATA_POINT__OPT_MIN_MIN);
			dp[i].min = p->min;
			dp[i].opt_max_case =
				OTLP_PBC(HISTOGRAM_DATA_POINT__OPT_MAX_MAX);
			dp[i].max = p->max;
		}
		if (h && h->counts) {
			dp[i].n_explicit_bounds = h->nbounds;
			dp[i].explicit_bounds = arena_dup(a, h->bounds,
					h->nbounds * sizeof(double));
			dp[i].n_bucket_counts = h->nbounds + 1;
			dp[i].bucket_counts = arena_dup(a, h->counts,
					(h->nbounds + 1) * sizeof(uint64_t));
			if (!dp[i].bucket_counts ||
			    (h->nbounds && !dp[i].explicit_bounds))
				return -ENOMEM;
		}
		v[i] = &dp[i];
	}
	*out = v;
	return 0;
}

static otlp_pb_exp_buckets *exp_buckets(struct arena *a, int32_t offset,
					const uint64_t *counts, size_t n)
{
	otlp_pb_exp_buckets *b;

	b = ANEW(a, otlp_pb_exp_buckets,
		 OTLP_PBC(EXPONENTIAL_HISTOGRAM_DATA_POINT__BUCKETS__INIT));
	if (!b)
		return NULL;
	b->offset = offset;
	b->n_bucket_counts = n;
	if (n) {
		b->bucket_counts = arena_dup(a, counts, n * sizeof(uint64_t));
		if (!b->bucket_counts)
			return NULL;
	}
	return b;
}

static int add_exp_points(struct arena *a, const struct mmetric_desc *d,
			  const struct mpoint_view *pts, size_t n,
			  otlp_pb_exp_histogram_dp ***out)
{
	otlp_pb_exp_histogram_dp **v, *dp;
	size_t i;

	v = arena_alloc(a, n * sizeof(*v));
	dp = arena_alloc(a, n * sizeof(*dp));
	if (!v || !dp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mpoint_view *p = &pts[i];
		const struct mhist_exp_view *h = p->exp_h;

		dp[i] = (otlp_pb_exp_histogram_dp)
			OTLP_PBC(EXPONENTIAL_HISTOGRAM_DATA_POINT__INIT);
		dp[i].n_attributes = p->nlabels;
		dp[i].attributes = attrs_from_labels(a, p->labels, p->nlabels);
		if (p->nlabels && !dp[i].attributes)
			return -ENOMEM;
		dp[i].start_time_unix_nano = p->start_ns;
		dp[i].time_unix_nano = p->time_ns;
		dp[i].count = p->count;
		dp[i].opt_sum_case =
			OTLP_PBC(EXPONENTIAL_HISTOGRAM_DATA_POINT__OPT_SUM_SUM);
		dp[i].sum = p->sum;
		if (p->count) {
			dp[i].opt_min_case = OTLP_PBC(
				EXPONENTIAL_HISTOGRAM_DATA_POINT__OPT_MIN_MIN);
			dp[i].min = p->min;
			dp[i].opt_max_case = OTLP_PBC(
				EXPONENTIAL_HISTOGRAM_DATA_POINT__OPT_MAX_MAX);
			dp[i].max = p->max;
		}
		if (h) {
			dp[i].scale = h->scale;
			dp[i].zero_count = h->zero_count;
			dp[i].positive = exp_buckets(a, h->pos_offset,
						     h->pos_counts, h->pos_n);
			dp[i].negative = exp_buckets(a, h->neg_offset,
						     h->neg_counts, h->neg_n);
			if (!dp[i].positive || !dp[i].negative)
				return -ENOMEM;
		}
		v[i] = &dp[i];
	}
	*out = v;
	return 0;
}

static int temporality(const struct mmetric_desc *d)
{
	return d->temporality == MT_DELTA ?
		OTLP_PBC(AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_DELTA) :
		OTLP_PBC(AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE);
}

static int fill_metric_data(struct arena *a, otlp_pb_metric *m,
			    const struct mmetric_desc *d,
			    const struct mpoint_view *pts, size_t n)
{
	otlp_pb_gauge *g;
	otlp_pb_sum *s;
	otlp_pb_histogram *h;
	otlp_pb_exp_histogram *eh;

	switch (d->instrument) {
	case MI_GAUGE:
		g = ANEW(a, otlp_pb_gauge, OTLP_PBC(GAUGE__INIT));
		if (!g)
			return -ENOMEM;
		g->n_data_points = n;
		m->data_case = OTLP_PBC(METRIC__DATA_GAUGE);
		m->gauge = g;
		return add_number_points(a, d, pts, n, &g->data_points);
	case MI_COUNTER:
	case MI_UPDOWN:
		s = ANEW(a, otlp_pb_sum, OTLP_PBC(SUM__INIT));
		if (!s)
			return -ENOMEM;
		s->n_data_points = n;
		s->aggregation_temporality = temporality(d);
		s->is_monotonic = d->instrument == MI_COUNTER;
		m->data_case = OTLP_PBC(METRIC__DATA_SUM);
		m->sum = s;
		return add_number_points(a, d, pts, n, &s->data_points);
	case MI_HISTOGRAM:
		if (d->hist == MH_EXPONENTIAL) {
			eh = ANEW(a, otlp_pb_exp_histogram,
				  OTLP_PBC(EXPONENTIAL_HISTOGRAM__INIT));
			if (!eh)
				return -ENOMEM;
			eh->n_data_points = n;
			eh->aggregation_temporality = temporality(d);
			m->data_case =
				OTLP_PBC(METRIC__DATA_EXPONENTIAL_HISTOGRAM);
			m->exponential_histogram = eh;
			return add_exp_points(a, d, pts, n, &eh->data_points);
		}
		h = ANEW(a, otlp_pb_histogram, OTLP_PBC(HISTOGRAM__INIT));
		if (!h)
			return -ENOMEM;
		h->n_data_points = n;
		h->aggregation_temporality = temporality(d);
		m->data_case = OTLP_PBC(METRIC__DATA_HISTOGRAM);
		m->histogram = h;
		return add_explicit_points(a, d, pts, n, &h->data_points);
	}
	return -EINVAL;
}

int otlp_encoder__add(void *ctx, const struct mmetric_desc *desc,
		      const struct mpoint_view *points, size_t npoints)
{
	struct otlp_encoder *e = ctx;
	struct arena *a = &e->arena;
	otlp_pb_metric *m;
	int err;

	if (!npoints)
		return 0;
	if (e->nmetrics == e->cap_metrics) {
		size_t cap = e->cap_metrics ? e->cap_metrics * 2 : 64;
		otlp_pb_metric **v;

		v = realloc(e->metrics, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		e->metrics = v;
		e->cap_metrics = cap;
	}
	m = ANEW(a, otlp_pb_metric, OTLP_PBC(METRIC__INIT));
	if (!m)
		return -ENOMEM;
	m->name = arena_strdup(a, desc->name);
	m->description = arena_strdup(a, desc->description);
	m->unit = arena_strdup(a, desc->unit);
	if (!m->name || !m->description || !m->unit)
		return -ENOMEM;
	err = fill_metric_data(a, m, desc, points, npoints);
	if (err)
		return err;
	e->metrics[e->nmetrics++] = m;
	e->npoints += npoints;
	return 0;
}

static void encoder_reset(struct otlp_encoder *e)
{
	arena_rewind(&e->arena);
	e->nmetrics = 0;
	e->npoints = 0;
}

static size_t metric_npoints(const otlp_pb_metric *m)
{
	switch (m->data_case) {
	case OTLP_PBC(METRIC__DATA_GAUGE):
		return m->gauge->n_data_points;
	case OTLP_PBC(METRIC__DATA_SUM):
		return m->sum->n_data_points;
	case OTLP_PBC(METRIC__DATA_HISTOGRAM):
		return m->histogram->n_data_points;
	case OTLP_PBC(METRIC__DATA_EXPONENTIAL_HISTOGRAM):
		return m->exponential_histogram->n_data_points;
	default:
		return 0;
	}
}

/*
 * A shallow copy of m carrying only points [off, off + n): a metric too big
 * for one request goes out in several, each with the full descriptor.
 */
static otlp_pb_metric *metric_slice(struct arena *a, const otlp_pb_metric *m,
				    size_t off, size_t n)
{
	otlp_pb_metric *c;

	if (off == 0 && n == metric_npoints(m))
		return (otlp_pb_metric *)m;
	c = arena_dup(a, m, sizeof(*m));
	if (!c)
		return NULL;
#define SLICE(field, type) do {                                         \
		type *d = arena_dup(a, m->field, sizeof(type));          \
		if (!d)                                                  \
			return NULL;                                     \
		d->data_points += off;                                   \
		d->n_data_points = n;                                    \
		c->field = d;                                            \
	} while (0)
	switch (m->data_case) {
	case OTLP_PBC(METRIC__DATA_GAUGE):
		SLICE(gauge, otlp_pb_gauge);
		break;
	case OTLP_PBC(METRIC__DATA_SUM):
		SLICE(sum, otlp_pb_sum);
		break;
	case OTLP_PBC(METRIC__DATA_HISTOGRAM):
		SLICE(histogram, otlp_pb_histogram);
		break;
	case OTLP_PBC(METRIC__DATA_EXPONENTIAL_HISTOGRAM):
		SLICE(exponential_histogram, otlp_pb_exp_histogram);
		break;
	default:
		break;
	}
#undef SLICE
	return c;
}

static int pack_request(struct otlp_encoder *e, otlp_pb_metric **metrics,
			size_t nmetrics, void **buf, size_t *len)
{
	otlp_pb_request req = OTLP_PBC(EXPORT_METRICS_SERVICE_REQUEST__INIT);
	otlp_pb_resource_metrics rm = OTLP_PBC(RESOURCE_METRICS__INIT);
	otlp_pb_resource res = OTLP_PBC(RESOURCE__INIT);
	otlp_pb_scope_metrics sm = OTLP_PBC(SCOPE_METRICS__INIT);
	otlp_pb_scope scope = OTLP_PBC(INSTRUMENTATION_SCOPE__INIT);
	otlp_pb_resource_metrics *rmp = &rm;
	otlp_pb_scope_metrics *smp = &sm;
	size_t size;

	res.n_attributes = e->nres;
	res.attributes = e->res_attrs;
	scope.name = e->scope_name;
	scope.version = e->scope_version;
	sm.scope = &scope;
	sm.n_metrics = nmetrics;
	sm.metrics = metrics;
	rm.resource = &res;
	rm.n_scope_metrics = 1;
	rm.scope_metrics = &smp;
	req.n_resource_metrics = 1;
	req.resource_metrics = &rmp;

	size = protobuf_c_message_get_packed_size(&req.base);
	*buf = malloc(size ? size : 1);
	if (!*buf)
		return -ENOMEM;
	*len = protobuf_c_message_pack(&req.base, *buf);
	return 0;
}

int otlp_encoder__finish_split(struct otlp_encoder *e, size_t max_points,
			       otlp_emit_fn emit, void *ctx)
{
	otlp_pb_metric **batch = NULL;
	size_t i = 0, off = 0, total = 0;
	int ret = 0;

	if (!max_points)
		max_points = SIZE_MAX;
	if (e->nmetrics) {
		batch = arena_alloc(&e->arena, e->nmetrics * sizeof(*batch));
		if (!batch) {
			ret = -ENOMEM;
			goto cleanup;
		}
	}
	while (i < e->nmetrics) {
		size_t nb = 0, taken = 0, n;
		void *buf;
		size_t len;

		while (i < e->nmetrics && taken < max_points) {
			size_t left = metric_npoints(e->metrics[i]) - off;

			n = left < max_points - taken ? left : max_points - taken;
			batch[nb] = metric_slice(&e->arena, e->metrics[i], off, n);
			if (!batch[nb]) {
				ret = -ENOMEM;
				goto cleanup;
			}
			nb++;
			taken += n;
			off += n;
			if (off == metric_npoints(e->metrics[i])) {
				i++;
				off = 0;
			}
		}
		ret = pack_request(e, batch, nb, &buf, &len);
		if (ret)
			goto cleanup;
		ret = emit(ctx, buf, len, taken);
		if (ret < 0)
			goto cleanup;
		total += taken;
	}
	ret = total > INT32_MAX ? INT32_MAX : (int)total;
cleanup:
	encoder_reset(e);
	return ret;
}

struct one_buf {
	void *buf;
	size_t len;
};

static int keep_one(void *ctx, void *buf, size_t len, size_t npoints)
{
	struct one_buf *ob = ctx;

	ob->buf = buf;
	ob->len = len;
	return 0;
}

int otlp_encoder__finish(struct otlp_encoder *e, void **buf, size_t *len)
{
	struct one_buf ob = {};
	int ret;

	ret = otlp_encoder__finish_split(e, SIZE_MAX, keep_one, &ob);
	*buf = ret > 0 ? ob.buf : NULL;
	*len = ret > 0 ? ob.len : 0;
	if (ret <= 0)
		free(ob.buf);
	return ret;
}

int otlp_encode__store(struct otlp_encoder *e, struct mstore *s,
		       uint64_t now_ns, void **buf, size_t *len)
{
	int err;

	err = mstore__collect(s, MT_DELTA, now_ns, otlp_encoder__add, e);
	if (err < 0) {
		encoder_reset(e);
		*buf = NULL;
		*len = 0;
		return err;
	}
	return otlp_encoder__finish(e, buf, len);
}

int otlp_encode__store_split(struct otlp_encoder *e, struct mstore *s,
			     uint64_t now_ns, size_t max_points,
			     otlp_emit_fn emit, void *ctx)
{
	int err;

	err = mstore__collect(s, MT_DELTA, now_ns, otlp_encoder__add, e);
	if (err < 0) {
		encoder_reset(e);
		return err;
	}
	return otlp_encoder__finish_split(e, max_points, emit, ctx);
}

static bool has_key(const struct mlabel *l, size_t n, const char *key)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (l[i].key && !strcmp(l[i].key, key) && l[i].value &&
		    *l[i].value)
			return true;
	return false;
}

static char *xstrdup(const char *s)
{
	return strdup(s ? s : "");
}

/* Resource KeyValues are malloc()ed singly: they live as long as the
 * encoder and there are only a handful. */
static int build_resource(struct otlp_encoder *e, const struct otlp_encode_opts *o)
{
	struct mlabel defaults[2];
	size_t ndef = 0, n, i, k = 0;

	if (!has_key(o->resource, o->nresource, "service.name"))
		defaults[ndef++] = (struct mlabel){ "service.name", "milometer" };
	if (!has_key(o->resource, o->nresource, "service.version"))
		defaults[ndef++] = (struct mlabel){ "service.version",
						    e->scope_version };
	n = ndef + o->nresource;
	e->res_attrs = calloc(n, sizeof(*e->res_attrs));
	e->res_kv = calloc(n, sizeof(*e->res_kv));
	e->res_any = calloc(n, sizeof(*e->res_any));
	if (!e->res_attrs || !e->res_kv || !e->res_any)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mlabel *l = i < ndef ? &defaults[i] :
					 &o->resource[i - ndef];
		otlp_pb_kv *kv = &e->res_kv[k];
		otlp_pb_any *any = &e->res_any[k];

		if (!l->key || !*l->key || !l->value || !*l->value)
			continue;
		*kv = (otlp_pb_kv)OTLP_PBC(KEY_VALUE__INIT);
		*any = (otlp_pb_any)OTLP_PBC(ANY_VALUE__INIT);
		any->value_case = OTLP_PBC(ANY_VALUE__VALUE_STRING_VALUE);
		any->string_value = strdup(l->value);
		kv->key = strdup(l->key);
		kv->value = any;
		e->res_attrs[k++] = kv;
		e->nres = k; /* otlp_encoder__free() frees what is set */
		if (!kv->key || !any->string_value)
			return -ENOMEM;
	}
	return 0;
}

struct otlp_encoder *otlp_encoder__new(const struct otlp_encode_opts *o)
{
	struct otlp_encode_opts none = {};
	struct otlp_encoder *e;

	if (!o)
		o = &none;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->scope_name = xstrdup(o->scope_name ? o->scope_name : "milometer");
	e->scope_version = xstrdup(o->scope_version ? o->scope_version :
				   MM_VERSION);
	if (!e->scope_name || !e->scope_version ||
	    build_resource(e, o) < 0) {
		otlp_encoder__free(e);
		return NULL;
	}
	return e;
}

void otlp_encoder__free(struct otlp_encoder *e)
{
	size_t i;

	if (!e)
		return;
	for (i = 0; i < e->nres; i++) {
		free(e->res_kv[i].key);
		free(e->res_any[i].string_value);
	}
	free(e->res_attrs);
	free(e->res_kv);
	free(e->res_any);
	free(e->scope_name);
	free(e->scope_version);
	free(e->metrics);
	arena_free(&e->arena);
	free(e);
}
