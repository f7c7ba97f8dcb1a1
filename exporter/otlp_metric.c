// SPDX-License-Identifier: Apache-2.0
/* Store points -> OTLP Metric messages; see otlp_metric.h. */
#include <errno.h>

#include "policy/model/hist_exp.h"
#include "exporter/otlp_metric.h"

static otlp_pb_kv **attrs_from_labels(struct otlp_arena *a,
				      const struct mlabel *labels, size_t n)
{
	otlp_pb_kv **v, *kv;
	otlp_pb_any *any;
	size_t i;

	if (!n)
		return NULL;
	v = otlp_arena__alloc(a, n * sizeof(*v));
	kv = otlp_arena__alloc(a, n * sizeof(*kv));
	any = otlp_arena__alloc(a, n * sizeof(*any));
	if (!v || !kv || !any)
		return NULL;
	for (i = 0; i < n; i++) {
		kv[i] = (otlp_pb_kv)OTLP_PBC(KEY_VALUE__INIT);
		any[i] = (otlp_pb_any)OTLP_PBC(ANY_VALUE__INIT);
		any[i].value_case = OTLP_PBC(ANY_VALUE__VALUE_STRING_VALUE);
		any[i].string_value = otlp_arena__strdup(a, labels[i].value);
		kv[i].key = otlp_arena__strdup(a, labels[i].key);
		kv[i].value = &any[i];
		if (!kv[i].key || !any[i].string_value)
			return NULL;
		v[i] = &kv[i];
	}
	return v;
}

static int add_number_points(struct otlp_arena *a, const struct mmetric_desc *d,
			     const struct mpoint_view *pts, size_t n,
			     otlp_pb_number_dp ***out)
{
	otlp_pb_number_dp **v, *dp;
	size_t i;

	v = otlp_arena__alloc(a, n * sizeof(*v));
	dp = otlp_arena__alloc(a, n * sizeof(*dp));
	if (!v || !dp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		dp[i] = (otlp_pb_number_dp)OTLP_PBC(NUMBER_DATA_POINT__INIT);
		dp[i].n_attributes = pts[i].nlabels;
		dp[i].attributes =
			attrs_from_labels(a, pts[i].labels, pts[i].nlabels);
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

/*
 * The fields HistogramDataPoint and ExponentialHistogramDataPoint share
 * (attributes, times, count, sum, min/max only when there is a value):
 * filled in one place for both. A macro, because protobuf-c generates two
 * unrelated struct types with the same field names. T is the message's
 * OTLP_PBC() prefix. Evaluates to -ENOMEM or 0.
 */
#define HIST_COMMON(a, dp, p, T)                                               \
	({                                                                     \
		(dp)->n_attributes = (p)->nlabels;                             \
		(dp)->attributes =                                             \
			attrs_from_labels((a), (p)->labels, (p)->nlabels);     \
		(dp)->start_time_unix_nano = (p)->start_ns;                    \
		(dp)->time_unix_nano = (p)->time_ns;                           \
		(dp)->count = (p)->count;                                      \
		(dp)->opt_sum_case = OTLP_PBC(T##__OPT_SUM_SUM);               \
		(dp)->sum = (p)->sum;                                          \
		if ((p)->count) {                                              \
			(dp)->opt_min_case = OTLP_PBC(T##__OPT_MIN_MIN);       \
			(dp)->min = (p)->min;                                  \
			(dp)->opt_max_case = OTLP_PBC(T##__OPT_MAX_MAX);       \
			(dp)->max = (p)->max;                                  \
		}                                                              \
		(p)->nlabels && !(dp)->attributes ? -ENOMEM : 0;               \
	})

static int add_explicit_points(struct otlp_arena *a,
			       const struct mmetric_desc *d,
			       const struct mpoint_view *pts, size_t n,
			       otlp_pb_histogram_dp ***out)
{
	otlp_pb_histogram_dp **v, *dp;
	size_t i;

	v = otlp_arena__alloc(a, n * sizeof(*v));
	dp = otlp_arena__alloc(a, n * sizeof(*dp));
	if (!v || !dp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mpoint_view *p = &pts[i];
		const struct mhist_explicit_view *h = p->explicit_h;

		dp[i] = (otlp_pb_histogram_dp)OTLP_PBC(
			HISTOGRAM_DATA_POINT__INIT);
		if (HIST_COMMON(a, &dp[i], p, HISTOGRAM_DATA_POINT))
			return -ENOMEM;
		if (h && h->counts) {
			dp[i].n_explicit_bounds = h->nbounds;
			dp[i].explicit_bounds = otlp_arena__dup(
				a, h->bounds, h->nbounds * sizeof(double));
			dp[i].n_bucket_counts = h->nbounds + 1;
			dp[i].bucket_counts = otlp_arena__dup(
				a, h->counts,
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

static otlp_pb_exp_buckets *exp_buckets(struct otlp_arena *a, int32_t offset,
					const void *counts, uint8_t width,
					size_t n)
{
	otlp_pb_exp_buckets *b;
	uint64_t *c;

	b = OTLP_ANEW(
		a, otlp_pb_exp_buckets,
		OTLP_PBC(EXPONENTIAL_HISTOGRAM_DATA_POINT__BUCKETS__INIT));
	if (!b)
		return NULL;
	b->offset = offset;
	b->n_bucket_counts = n;
	if (n) {
		c = otlp_arena__alloc(a, n * sizeof(uint64_t));
		if (!c)
			return NULL;
		for (size_t i = 0; i < n; i++)
			c[i] = hist_exp__count_at(counts, width, i);
		b->bucket_counts = c;
	}
	return b;
}

static int add_exp_points(struct otlp_arena *a, const struct mmetric_desc *d,
			  const struct mpoint_view *pts, size_t n,
			  otlp_pb_exp_histogram_dp ***out)
{
	otlp_pb_exp_histogram_dp **v, *dp;
	size_t i;

	v = otlp_arena__alloc(a, n * sizeof(*v));
	dp = otlp_arena__alloc(a, n * sizeof(*dp));
	if (!v || !dp)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		const struct mpoint_view *p = &pts[i];
		const struct mhist_exp_view *h = p->exp_h;

		dp[i] = (otlp_pb_exp_histogram_dp)OTLP_PBC(
			EXPONENTIAL_HISTOGRAM_DATA_POINT__INIT);
		if (HIST_COMMON(a, &dp[i], p, EXPONENTIAL_HISTOGRAM_DATA_POINT))
			return -ENOMEM;
		if (h) {
			dp[i].scale = h->scale;
			dp[i].zero_count = h->zero_count;
			dp[i].positive = exp_buckets(a, h->pos_offset,
						     h->pos_counts,
						     h->pos_width, h->pos_n);
			dp[i].negative = exp_buckets(a, h->neg_offset,
						     h->neg_counts,
						     h->neg_width, h->neg_n);
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
	return d->temporality == MT_DELTA
		       ? OTLP_PBC(
				 AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_DELTA)
		       : OTLP_PBC(
				 AGGREGATION_TEMPORALITY__AGGREGATION_TEMPORALITY_CUMULATIVE);
}

int otlp_metric__fill(struct otlp_arena *a, otlp_pb_metric *m,
		      const struct mmetric_desc *d,
		      const struct mpoint_view *pts, size_t n)
{
	otlp_pb_gauge *g;
	otlp_pb_sum *s;
	otlp_pb_histogram *h;
	otlp_pb_exp_histogram *eh;

	switch (d->instrument) {
	case MI_GAUGE:
		g = OTLP_ANEW(a, otlp_pb_gauge, OTLP_PBC(GAUGE__INIT));
		if (!g)
			return -ENOMEM;
		g->n_data_points = n;
		m->data_case = OTLP_PBC(METRIC__DATA_GAUGE);
		m->gauge = g;
		return add_number_points(a, d, pts, n, &g->data_points);
	case MI_COUNTER:
	case MI_UPDOWN:
		s = OTLP_ANEW(a, otlp_pb_sum, OTLP_PBC(SUM__INIT));
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
			eh = OTLP_ANEW(a, otlp_pb_exp_histogram,
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
		h = OTLP_ANEW(a, otlp_pb_histogram, OTLP_PBC(HISTOGRAM__INIT));
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

size_t otlp_metric__npoints(const otlp_pb_metric *m)
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
otlp_pb_metric *otlp_metric__slice(struct otlp_arena *a,
				   const otlp_pb_metric *m, size_t off,
				   size_t n)
{
	otlp_pb_metric *c;

	if (off == 0 && n == otlp_metric__npoints(m))
		return (otlp_pb_metric *)m;
	c = otlp_arena__dup(a, m, sizeof(*m));
	if (!c)
		return NULL;
#define SLICE(field, type)                                                     \
	do {                                                                   \
		type *d = otlp_arena__dup(a, m->field, sizeof(type));          \
		if (!d)                                                        \
			return NULL;                                           \
		d->data_points += off;                                         \
		d->n_data_points = n;                                          \
		c->field = d;                                                  \
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
