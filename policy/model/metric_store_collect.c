// SPDX-License-Identifier: Apache-2.0
/*
 * The metric store's collection side: points of every metric as views for
 * the exporters (Prometheus text, OTLP), cumulative or delta, sorted by
 * labels, idle series expired on the way; and the store's statistics.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/hist_exp.h"
#include "policy/model/hist_explicit.h"
#include "policy/model/metric_store_impl.h"

/* ------------------------------------------------------------- collection */

static int cmp_series(const void *a, const void *b, void *strs)
{
	const struct strtab *t = strs;
	const struct mseries *x = *(struct mseries *const *)a;
	const struct mseries *y = *(struct mseries *const *)b;
	uint16_t i, n = x->nlabels < y->nlabels ? x->nlabels : y->nlabels;
	int c;

	for (i = 0; i < 2 * n; i++) {
		if (x->labels[i] == y->labels[i])
			continue;
		c = strcmp(strtab__str(t, x->labels[i]),
			   strtab__str(t, y->labels[i]));
		if (c)
			return c;
	}
	return (int)x->nlabels - (int)y->nlabels;
}

static int scratch_reserve(struct mstore *s, size_t npoints, size_t nlabels)
{
	if (npoints > s->scap) {
		size_t cap = npoints * 2;
		void *a = realloc(s->sv, cap * sizeof(*s->sv));

		if (!a)
			return -ENOMEM;
		s->sv = a;
		a = realloc(s->pv, cap * sizeof(*s->pv));
		if (!a)
			return -ENOMEM;
		s->pv = a;
		a = realloc(s->ev, cap * sizeof(*s->ev));
		if (!a)
			return -ENOMEM;
		s->ev = a;
		a = realloc(s->xv, cap * sizeof(*s->xv));
		if (!a)
			return -ENOMEM;
		s->xv = a;
		s->scap = cap;
	}
	if (nlabels > s->lcap) {
		size_t cap = nlabels * 2;
		void *a = realloc(s->lv, cap * sizeof(*s->lv));

		if (!a)
			return -ENOMEM;
		s->lv = a;
		s->lcap = cap;
	}
	return 0;
}

static bool expired(const struct mstore *s, struct mseries *ser,
		    uint64_t now_ns)
{
	if (!s->opts.idle_expiry_ns || ser->holds)
		return false;
	/* data no delta reader has seen yet is not idle: keep it until then */
	if (ser->m->has_delta && (ser->flags & SER_DIRTY))
		return false;
	/* a series nobody recorded into ages from the first collection */
	if (!ser->last_ns)
		ser->last_ns = now_ns;
	return now_ns > ser->last_ns &&
	       now_ns - ser->last_ns > s->opts.idle_expiry_ns;
}

static void fill_point(struct mstore *s, struct mmetric *m, struct mseries *ser,
		       bool delta, uint64_t now_ns, size_t k, struct mlabel *lv)
{
	struct mpoint_view *p = &s->pv[k];
	void *acc = ser_acc(ser, delta);
	uint16_t i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < ser->nlabels; i++) {
		lv[i].key = strtab__str(&s->strs, ser->labels[2 * i]);
		lv[i].value = strtab__str(&s->strs, ser->labels[2 * i + 1]);
	}
	p->labels = lv;
	p->nlabels = ser->nlabels;
	p->subject = ser->subject ? strtab__str(&s->strs, ser->subject - 1)
				  : NULL;
	p->start_ns = delta && m->last_delta_ns ? m->last_delta_ns
						: ser->start_ns;
	p->time_ns = now_ns;
	if (m->desc.instrument != MI_HISTOGRAM) {
		union sum_acc *a = acc;

		if (m->desc.is_int) {
			p->ivalue = a->i;
			p->value = (double)a->i;
		} else {
			p->value = a->d;
			p->ivalue = fabs(a->d) < 9.2e18 ? (int64_t)a->d : 0;
		}
	} else if (is_exp(m)) {
		struct hist_exp *h = acc;
		struct mhist_exp_view *x = &s->xv[k];

		p->count = h->count;
		p->sum = h->sum;
		p->min = h->min;
		p->max = h->max;
		x->scale = h->scale;
		x->zero_count = h->zero_count;
		x->pos_offset = h->pos.offset;
		x->pos_counts = h->pos.counts;
		x->pos_width = h->pos.width;
		x->pos_n = h->pos.n;
		x->neg_offset = h->neg.offset;
		x->neg_counts = h->neg.counts;
		x->neg_width = h->neg.width;
		x->neg_n = h->neg.n;
		p->exp_h = x;
	} else {
		struct hist_explicit *h = acc;
		struct mhist_explicit_view *e = &s->ev[k];

		p->count = h->count;
		p->sum = h->sum;
		p->min = h->min;
		p->max = h->max;
		e->bounds = m->desc.bounds;
		e->nbounds = m->desc.nbounds;
		e->counts = h->counts;
		p->explicit_h = e;
	}
}

static void delta_reset(struct mmetric *m, struct mseries *ser)
{
	void *acc = ser_acc(ser, true);

	if (is_exp(m))
		hist_exp__reset(acc, m->max_scale);
	else
		mstore_impl__acc_init(m, acc);
	ser->flags &= ~SER_DIRTY;
}

static int collect_metric(struct mstore *s, struct mmetric *m,
			  enum mtemporality view, uint64_t now_ns,
			  mstore_visit_fn fn, void *ctx)
{
	bool delta = view == MT_DELTA && m->has_delta;
	struct mmetric_desc d = m->desc;
	struct mseries *ser, *next;
	size_t n = 0, nl = 0, k, li;
	uint32_t i;
	int err;

	err = scratch_reserve(s, m->nregular + 1, 0);
	if (err)
		return err;
	for (i = 0; i < m->nbuckets; i++) {
		for (ser = m->buckets[i]; ser; ser = next) {
			next = ser->next;
			if (expired(s, ser, now_ns)) {
				mstore_impl__table_unlink(m, ser);
				if (ser == m->overflow)
					m->overflow = NULL;
				else
					m->nregular--;
				s->series_active--;
				s->series_expired++;
				mstore_impl__ser_free(s, ser);
				continue;
			}
			if (!(ser->flags & SER_HAS_DATA))
				continue;
			/* a delta point only for series that saw data */
			if (delta && !(ser->flags & SER_DIRTY))
				continue;
			s->sv[n++] = ser;
			nl += ser->nlabels;
		}
	}
	if (!n)
		goto done;
	err = scratch_reserve(s, n, nl);
	if (err)
		return err;
	qsort_r(s->sv, n, sizeof(*s->sv), cmp_series, &s->strs);
	for (k = 0, li = 0; k < n; k++) {
		/* no label anywhere: lv may be NULL, and NULL + 0 is UB */
		fill_point(s, m, s->sv[k], delta, now_ns, k,
			   s->lv ? s->lv + li : NULL);
		li += s->sv[k]->nlabels;
	}
	/* what the points are, which is what an exporter must label them */
	if (m->desc.instrument != MI_GAUGE)
		d.temporality = delta ? MT_DELTA : MT_CUMULATIVE;
	err = fn(ctx, &d, s->pv, n);
	if (delta)
		for (k = 0; k < n; k++)
			delta_reset(m, s->sv[k]);
	err = err < 0 ? err : 0;
done:
	if (delta)
		m->last_delta_ns = now_ns;
	return err;
}

int mstore__collect(struct mstore *s, enum mtemporality view, uint64_t now_ns,
		    mstore_visit_fn fn, void *ctx)
{
	int i, err = 0;

	mstore__lock(s);
	for (i = 0; i < s->nmetrics && !err; i++)
		if (s->metrics[i] && !s->metrics[i]->dead)
			err = collect_metric(s, s->metrics[i], view, now_ns, fn,
					     ctx);
	mstore__unlock(s);
	return err;
}

void mstore__default_bounds_for_unit(const char *unit, const double **bounds,
				     size_t *nbounds)
{
	hist_explicit__default_bounds(unit, bounds, nbounds);
}

void mstore__stats(struct mstore *s, struct mstore_stats *st)
{
	mstore__lock(s);
	st->series_active = s->series_active;
	st->series_overflowed = s->series_overflowed;
	st->series_expired = s->series_expired;
	st->bytes = s->bytes;
	mstore__unlock(s);
}
