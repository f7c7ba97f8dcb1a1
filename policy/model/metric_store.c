// SPDX-License-Identifier: Apache-2.0
/*
 * The metric store: see metric_store.h. Interned strings are strtab.c,
 * collection (views for the exporters) metric_store_collect.c; the layout
 * they share is metric_store_impl.h.
 *
 * Memory layout, chosen for the per-series budget (bench: <= 200 B per
 * counter series, <= 1 KiB per explicit histogram series):
 *  - label strings are interned once per store with a refcount, and a series
 *    refers to them by 32-bit id (8 bytes per label pair);
 *  - a series is one heap block: header, label ids, then one accumulator
 *    (two for delta metrics when keep_delta); only exponential histogram
 *    bucket arrays are separate allocations;
 *  - series of a metric hang off a chained hash table keyed by the label ids.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/model/hist_exp.h"
#include "policy/model/hist_explicit.h"
#include "policy/model/metric_store_impl.h"

/* ----------------------------------------------------------------- series */

void mstore_impl__acc_init(struct mmetric *m, void *acc)
{
	if (m->desc.instrument != MI_HISTOGRAM)
		memset(acc, 0, m->acc_size);
	else if (is_exp(m))
		hist_exp__init(acc, m->max_scale);
	else
		hist_explicit__reset(acc, m->desc.nbounds);
}

void mstore_impl__ser_free(struct mstore *s, struct mseries *ser)
{
	struct mmetric *m = ser->m;
	uint32_t i;

	if (is_exp(m)) {
		s->bytes -= hist_exp__free(ser_acc(ser, false));
		if (m->has_delta)
			s->bytes -= hist_exp__free(ser_acc(ser, true));
	}
	for (i = 0; i < 2u * ser->nlabels; i++)
		strtab__put(&s->strs, ser->labels[i], &s->bytes);
	if (ser->subject)
		strtab__put(&s->strs, ser->subject - 1, &s->bytes);
	s->bytes -= strtab__heap_cost(ser_size(m, ser->nlabels));
	free(ser);
}

static uint32_t hash_ids(const uint32_t *ids, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i;

	for (i = 0; i < n; i++) {
		h ^= ids[i];
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	return (uint32_t)h;
}

static void table_insert(struct mmetric *m, struct mseries *ser)
{
	struct mseries **b = &m->buckets[ser->hash & (m->nbuckets - 1)];

	ser->next = *b;
	*b = ser;
}

void mstore_impl__table_unlink(struct mmetric *m, struct mseries *ser)
{
	struct mseries **pp = &m->buckets[ser->hash & (m->nbuckets - 1)];

	while (*pp != ser)
		pp = &(*pp)->next;
	*pp = ser->next;
}

static int table_grow(struct mstore *s, struct mmetric *m)
{
	uint32_t n = m->nbuckets ? m->nbuckets * 2 : 16, i;
	struct mseries **b = calloc(n, sizeof(*b)), *ser, *next;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < m->nbuckets; i++) {
		for (ser = m->buckets[i]; ser; ser = next) {
			next = ser->next;
			ser->next = b[ser->hash & (n - 1)];
			b[ser->hash & (n - 1)] = ser;
		}
	}
	if (m->buckets)
		s->bytes -= strtab__heap_cost(m->nbuckets * sizeof(*b));
	s->bytes += strtab__heap_cost(n * sizeof(*b));
	free(m->buckets);
	m->buckets = b;
	m->nbuckets = n;
	return 0;
}

/* ---------------------------------------------------------------- metrics */

static void metric_free(struct mstore *s, struct mmetric *m)
{
	uint32_t i;
	struct mseries *ser, *next;

	for (i = 0; i < m->nbuckets; i++) {
		for (ser = m->buckets[i]; ser; ser = next) {
			next = ser->next;
			mstore_impl__ser_free(s, ser);
		}
	}
	if (m->buckets)
		s->bytes -=
			strtab__heap_cost(m->nbuckets * sizeof(*m->buckets));
	free(m->buckets);
	free((char *)m->desc.name);
	free((char *)m->desc.description);
	free((char *)m->desc.unit);
	free((double *)m->desc.bounds);
	s->bytes -= strtab__heap_cost(sizeof(*m));
	free(m);
}

struct mstore *mstore__new(const struct mstore_opts *opts)
{
	struct mstore *s = calloc(1, sizeof(*s));
	pthread_mutexattr_t attr;

	if (!s)
		return NULL;
	if (opts)
		s->opts = *opts;
	if (!s->opts.max_series_per_metric)
		s->opts.max_series_per_metric = DEFAULT_MAX_SERIES;
	/*
	 * Recursive so that registration (which locks) also works from a
	 * producer that already holds the lock for a batch.
	 */
	pthread_mutexattr_init(&attr);
	pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&s->lock, &attr);
	pthread_mutexattr_destroy(&attr);
	return s;
}

void mstore__free(struct mstore *s)
{
	int i;

	if (!s)
		return;
	for (i = 0; i < s->nmetrics; i++)
		if (s->metrics[i])
			metric_free(s, s->metrics[i]);
	free(s->metrics);
	strtab__free(&s->strs);
	free(s->sv);
	free(s->pv);
	free(s->ev);
	free(s->xv);
	free(s->lv);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void mstore__lock(struct mstore *s)
{
	pthread_mutex_lock(&s->lock);
}

void mstore__unlock(struct mstore *s)
{
	pthread_mutex_unlock(&s->lock);
}

static bool streq_null(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

static void effective_bounds(const struct mmetric_desc *d,
			     const double **bounds, size_t *n)
{
	if (d->bounds) {
		*bounds = d->bounds;
		*n = d->nbounds;
	} else {
		hist_explicit__default_bounds(d->unit, bounds, n);
	}
}

static bool desc_same(const struct mmetric *m, const struct mmetric_desc *d)
{
	const struct mmetric_desc *o = &m->desc;

	if (!streq_null(o->description, d->description) ||
	    !streq_null(o->unit, d->unit) || o->instrument != d->instrument ||
	    o->temporality != d->temporality || o->is_int != d->is_int)
		return false;
	if (d->instrument != MI_HISTOGRAM)
		return true;
	if (o->hist != d->hist)
		return false;
	if (d->hist == MH_EXPONENTIAL)
		return m->max_buckets ==
			       (d->exp_max_buckets
					? d->exp_max_buckets
					: HIST_EXP_DEFAULT_MAX_BUCKETS) &&
		       m->max_scale == (d->exp_max_scale ? d->exp_max_scale
							 : HIST_EXP_MAX_SCALE);
	{
		const double *b;
		size_t n;

		effective_bounds(d, &b, &n);
		return n == o->nbounds && !memcmp(b, o->bounds, n * sizeof(*b));
	}
}

static int desc_check(const struct mmetric_desc *d)
{
	size_t i;

	if (!d->name || !d->name[0])
		return -EINVAL;
	if (d->instrument > MI_HISTOGRAM || d->temporality > MT_DELTA)
		return -EINVAL;
	if (d->instrument != MI_HISTOGRAM)
		return 0;
	if (d->hist == MH_EXPONENTIAL)
		return d->exp_max_scale > HIST_EXP_MAX_SCALE ||
				       d->exp_max_scale < HIST_EXP_MIN_SCALE ||
				       d->exp_max_buckets == 1
			       ? -EINVAL
			       : 0;
	if (d->hist != MH_EXPLICIT || (d->nbounds && !d->bounds))
		return -EINVAL;
	for (i = 0; d->bounds && i < d->nbounds; i++)
		if (!isfinite(d->bounds[i]) ||
		    (i && d->bounds[i] <= d->bounds[i - 1]))
			return -EINVAL;
	return 0;
}

static int metric_init(struct mstore *s, struct mmetric *m,
		       const struct mmetric_desc *d)
{
	const double *b;
	size_t n;
	double *bc;

	m->desc = *d;
	m->store = s;
	m->desc.name = strdup(d->name);
	m->desc.description = strdup(d->description ? d->description : "");
	m->desc.unit = strdup(d->unit ? d->unit : "");
	m->desc.bounds = NULL;
	if (!m->desc.name || !m->desc.description || !m->desc.unit)
		return -ENOMEM;
	m->has_delta = s->opts.keep_delta && d->temporality == MT_DELTA &&
		       d->instrument != MI_GAUGE;
	switch (d->instrument) {
	case MI_HISTOGRAM:
		if (d->hist == MH_EXPONENTIAL) {
			m->max_buckets = d->exp_max_buckets
						 ? d->exp_max_buckets
						 : HIST_EXP_DEFAULT_MAX_BUCKETS;
			m->max_scale = d->exp_max_scale ? d->exp_max_scale
							: HIST_EXP_MAX_SCALE;
			m->acc_size = align8(sizeof(struct hist_exp));
			break;
		}
		effective_bounds(d, &b, &n);
		bc = malloc((n ? n : 1) * sizeof(*bc));
		if (!bc)
			return -ENOMEM;
		memcpy(bc, b, n * sizeof(*bc));
		m->desc.bounds = bc;
		m->desc.nbounds = n;
		s->bytes += strtab__heap_cost(n * sizeof(*bc));
		m->acc_size = align8(hist_explicit__size(n));
		break;
	default:
		m->acc_size = sizeof(union sum_acc);
		break;
	}
	return 0;
}

int mstore__find_metric(struct mstore *s, const char *name)
{
	int i, ret = -ENOENT;

	mstore__lock(s);
	for (i = 0; i < s->nmetrics; i++) {
		if (s->metrics[i] && !s->metrics[i]->dead &&
		    !strcmp(s->metrics[i]->desc.name, name)) {
			ret = i;
			break;
		}
	}
	mstore__unlock(s);
	return ret;
}

int mstore__add_metric(struct mstore *s, const struct mmetric_desc *desc)
{
	struct mmetric *m = NULL;
	int id, err;

	err = desc_check(desc);
	if (err)
		return err;
	mstore__lock(s);
	id = mstore__find_metric(s, desc->name);
	if (id >= 0) {
		err = desc_same(s->metrics[id], desc) ? id : -EEXIST;
		goto cleanup;
	}
	if (s->nmetrics == s->cap) {
		int cap = s->cap ? s->cap * 2 : 32;
		struct mmetric **ms = realloc(s->metrics, cap * sizeof(*ms));

		if (!ms) {
			err = -ENOMEM;
			goto cleanup;
		}
		s->metrics = ms;
		s->cap = cap;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		err = -ENOMEM;
		goto cleanup;
	}
	s->bytes += strtab__heap_cost(sizeof(*m));
	err = metric_init(s, m, desc);
	if (err) {
		metric_free(s, m);
		goto cleanup;
	}
	/* ids are never reused so a stale id cannot reach a new metric */
	id = s->nmetrics++;
	s->metrics[id] = m;
	err = id;
cleanup:
	mstore__unlock(s);
	return err;
}

int mstore__remove_metric(struct mstore *s, int metric_id)
{
	struct mmetric *m;
	struct mseries *ser, *next;
	uint32_t i;
	int err = 0;

	mstore__lock(s);
	if (metric_id < 0 || metric_id >= s->nmetrics ||
	    !s->metrics[metric_id] || s->metrics[metric_id]->dead) {
		err = -ENOENT;
		goto cleanup;
	}
	m = s->metrics[metric_id];
	for (i = 0; i < m->nbuckets; i++) {
		for (ser = m->buckets[i]; ser; ser = next) {
			next = ser->next;
			s->series_active--;
			if (ser->holds) {
				ser->flags |= SER_ORPHAN;
				m->nheld_dead++;
				continue;
			}
			mstore_impl__table_unlink(m, ser);
			mstore_impl__ser_free(s, ser);
		}
	}
	m->dead = true;
	m->overflow = NULL;
	m->nregular = 0;
	if (!m->nheld_dead) {
		metric_free(s, m);
		s->metrics[metric_id] = NULL;
	}
cleanup:
	mstore__unlock(s);
	return err;
}

/* ----------------------------------------------------------- series find */

static int cmp_label_key(const void *a, const void *b)
{
	return strcmp(((const struct mlabel *)a)->key,
		      ((const struct mlabel *)b)->key);
}

static struct mseries *series_lookup(struct mmetric *m, const uint32_t *ids,
				     uint16_t n, uint32_t h)
{
	struct mseries *ser;

	if (!m->nbuckets)
		return NULL;
	for (ser = m->buckets[h & (m->nbuckets - 1)]; ser; ser = ser->next)
		if (ser->hash == h && ser->nlabels == n &&
		    !memcmp(ser->labels, ids, 2 * n * sizeof(*ids)))
			return ser;
	return NULL;
}

static struct mseries *series_create(struct mstore *s, struct mmetric *m,
				     const struct mlabel *l, uint16_t n,
				     uint8_t flags)
{
	size_t size = ser_size(m, n);
	struct mseries *ser;
	uint16_t i;
	long id;

	if (m->nregular + 1 > m->nbuckets && table_grow(s, m))
		return NULL;
	ser = calloc(1, size);
	if (!ser)
		return NULL;
	s->bytes += strtab__heap_cost(size);
	ser->m = m;
	ser->flags = flags;
	for (i = 0; i < 2 * n; i++) {
		id = strtab__get(&s->strs,
				 i & 1 ? l[i / 2].value : l[i / 2].key,
				 &s->bytes);
		if (id < 0) {
			ser->nlabels = i / 2;
			if (i & 1)
				strtab__put(&s->strs, ser->labels[i - 1],
					    &s->bytes);
			goto fail;
		}
		ser->labels[i] = (uint32_t)id;
	}
	ser->nlabels = n;
	ser->hash = hash_ids(ser->labels, 2 * n);
	mstore_impl__acc_init(m, ser_acc(ser, false));
	if (m->has_delta)
		mstore_impl__acc_init(m, ser_acc(ser, true));
	table_insert(m, ser);
	s->series_active++;
	return ser;
fail:
	/* mstore_impl__ser_free() sizes by nlabels; charge what was added back */
	s->bytes += strtab__heap_cost(ser_size(m, ser->nlabels)) -
		    strtab__heap_cost(size);
	mstore_impl__ser_free(s, ser);
	return NULL;
}

static struct mseries *series_overflow(struct mstore *s, struct mmetric *m)
{
	static const struct mlabel l = { OVERFLOW_KEY, OVERFLOW_VALUE };

	s->series_overflowed++;
	if (!m->overflow)
		m->overflow = series_create(s, m, &l, 1, SER_OVERFLOW);
	return m->overflow;
}

struct mseries *mstore__series(struct mstore *s, int metric_id,
			       const struct mlabel *labels, size_t nlabels)
{
	struct mlabel sorted[MAX_LABELS];
	uint32_t ids[2 * MAX_LABELS];
	struct mmetric *m;
	struct mseries *ser;
	size_t i, n = 0;
	bool all_known = true;

	if (metric_id < 0 || metric_id >= s->nmetrics)
		return NULL;
	m = s->metrics[metric_id];
	if (!m || m->dead || nlabels > MAX_LABELS)
		return NULL;
	for (i = 0; i < nlabels; i++) {
		if (!labels[i].key)
			continue;
		sorted[n].key = labels[i].key;
		sorted[n++].value = labels[i].value ? labels[i].value : "";
	}
	/* insertion sort keeps equal keys in call order: the last one wins */
	for (i = 1; i < n; i++) {
		struct mlabel t = sorted[i];
		size_t j = i;

		while (j && cmp_label_key(&sorted[j - 1], &t) > 0) {
			sorted[j] = sorted[j - 1];
			j--;
		}
		sorted[j] = t;
	}
	for (i = 0; i + 1 < n;) {
		if (!strcmp(sorted[i].key, sorted[i + 1].key)) {
			memmove(&sorted[i], &sorted[i + 1],
				(n - i - 1) * sizeof(sorted[0]));
			n--;
		} else {
			i++;
		}
	}
	for (i = 0; i < 2 * n && all_known; i++) {
		const char *str = i & 1 ? sorted[i / 2].value
					: sorted[i / 2].key;
		long id = strtab__find(&s->strs, str);

		if (id < 0)
			all_known = false;
		ids[i] = (uint32_t)id;
	}
	if (all_known) {
		ser = series_lookup(m, ids, (uint16_t)n, hash_ids(ids, 2 * n));
		if (ser)
			return ser;
	}
	/* the cardinality limit counts the overflow series, as the SDK does */
	if (m->nregular + 1 >= s->opts.max_series_per_metric)
		return series_overflow(s, m);
	ser = series_create(s, m, sorted, (uint16_t)n, 0);
	if (ser)
		m->nregular++;
	return ser;
}

/*
 * Hold and release lock themselves (the mutex is recursive) so a producer
 * dropping its cache from a teardown path cannot race a collection.
 */
void mstore__hold(struct mseries *ser)
{
	struct mstore *s = ser->m->store;

	mstore__lock(s);
	ser->holds++;
	mstore__unlock(s);
}

void mstore__release(struct mstore *s, struct mseries *ser)
{
	struct mmetric *m = ser->m;
	int i;

	mstore__lock(s);
	if (!ser->holds || --ser->holds || !(ser->flags & SER_ORPHAN))
		goto cleanup;
	mstore_impl__table_unlink(m, ser);
	mstore_impl__ser_free(s, ser);
	if (--m->nheld_dead)
		goto cleanup;
	for (i = 0; i < s->nmetrics; i++) {
		if (s->metrics[i] == m) {
			s->metrics[i] = NULL;
			break;
		}
	}
	metric_free(s, m);
cleanup:
	mstore__unlock(s);
}

/* -------------------------------------------------------------- producers */

static void touch(struct mseries *ser, uint64_t now_ns)
{
	if (!(ser->flags & SER_HAS_DATA))
		ser->start_ns = now_ns;
	ser->flags |= SER_HAS_DATA | SER_DIRTY;
	ser->last_ns = now_ns;
}

static void acc_add(struct mmetric *m, void *acc, double v)
{
	union sum_acc *a = acc;

	if (m->desc.is_int) {
		/*
		 * A transform may yield NaN, an infinity or more than int64
		 * holds: llround() of those is unspecified and the sum could
		 * overflow (UB). Saturate instead; NaN adds nothing.
		 */
		int64_t x = 0, r;

		if (v >= 0x1p63)
			x = INT64_MAX;
		else if (v <= -0x1p63)
			x = INT64_MIN;
		else if (v == v)
			x = (int64_t)llround(v);
		if (__builtin_add_overflow(a->i, x, &r))
			r = x > 0 ? INT64_MAX : INT64_MIN;
		a->i = r;
	} else {
		a->d += v;
	}
}

static void observe(struct mseries *ser, void *acc, double v)
{
	struct mmetric *m = ser->m;
	long grown;

	if (!is_exp(m)) {
		hist_explicit__observe(acc, m->desc.bounds, m->desc.nbounds, v);
		return;
	}
	grown = hist_exp__observe(acc, v, m->max_buckets);
	if (grown > 0)
		m->store->bytes += grown;
}

void mseries__add(struct mseries *ser, double v, uint64_t now_ns)
{
	struct mmetric *m = ser->m;

	if (isnan(v))
		return;
	if (m->desc.instrument == MI_HISTOGRAM) {
		mseries__observe(ser, v, now_ns);
		return;
	}
	/* a counter only goes up: the API spec has negative adds ignored */
	if (m->desc.instrument == MI_COUNTER && v < 0)
		return;
	acc_add(m, ser_acc(ser, false), v);
	if (m->has_delta)
		acc_add(m, ser_acc(ser, true), v);
	touch(ser, now_ns);
}

void mseries__set(struct mseries *ser, double v, uint64_t now_ns)
{
	struct mmetric *m = ser->m;
	union sum_acc *cum, *delta;
	double old;

	if (isnan(v) || m->desc.instrument == MI_HISTOGRAM)
		return;
	cum = ser_acc(ser, false);
	old = m->desc.is_int ? (double)cum->i : cum->d;
	if (m->desc.is_int)
		cum->i = (int64_t)llround(v);
	else
		cum->d = v;
	if (m->has_delta) {
		delta = ser_acc(ser, true);
		/*
		 * A total that went down means the source restarted: what
		 * it reports now all happened since the restart.
		 */
		acc_add(m, delta,
			m->desc.instrument == MI_COUNTER && v < old ? v
								    : v - old);
	}
	if (m->desc.instrument == MI_COUNTER && v < old &&
	    (ser->flags & SER_HAS_DATA))
		ser->start_ns = now_ns;
	touch(ser, now_ns);
}

void mseries__observe(struct mseries *ser, double v, uint64_t now_ns)
{
	struct mmetric *m = ser->m;

	if (m->desc.instrument == MI_GAUGE) {
		mseries__set(ser, v, now_ns);
		return;
	}
	if (m->desc.instrument != MI_HISTOGRAM) {
		mseries__add(ser, v, now_ns);
		return;
	}
	if (isnan(v))
		return;
	observe(ser, ser_acc(ser, false), v);
	if (m->has_delta)
		observe(ser, ser_acc(ser, true), v);
	touch(ser, now_ns);
}

int mstore__bind(struct mstore *s, struct mseries *ser, const char *subject)
{
	long id;

	if (ser->flags & (SER_SUBJECT_MIXED | SER_OVERFLOW)) {
		ser->flags |= SER_SUBJECT_MIXED;
		return 0;
	}
	if (ser->subject) {
		if (strcmp(strtab__str(&s->strs, ser->subject - 1), subject)) {
			/* fail closed: nobody but a full reader owns it now */
			strtab__put(&s->strs, ser->subject - 1, &s->bytes);
			ser->subject = 0;
			ser->flags |= SER_SUBJECT_MIXED;
		}
		return 0;
	}
	id = strtab__get(&s->strs, subject, &s->bytes);
	if (id < 0)
		return (int)id;
	ser->subject = (uint32_t)id + 1;
	return 0;
}

bool msubject__format(char *buf, size_t len, const char *group,
		      const char *resource, const char *ns, const char *name)
{
	int n = snprintf(buf, len, "%s%c%s%c%s%c%s", group ? group : "",
			 MSUBJECT_SEP, resource ? resource : "", MSUBJECT_SEP,
			 ns ? ns : "", MSUBJECT_SEP, name ? name : "");

	return n > 0 && (size_t)n < len;
}

bool msubject__parse(const char *subject, struct msubject *out, char *buf,
		     size_t len)
{
	const char **parts[4] = { &out->group, &out->resource, &out->ns,
				  &out->name };
	size_t n = strlen(subject);
	char *p = buf;

	if (n >= len)
		return false;
	memcpy(buf, subject, n + 1);
	for (int i = 0; i < 4; i++) {
		char *sep = i < 3 ? strchr(p, MSUBJECT_SEP) : NULL;

		if (i < 3 && !sep)
			return false;
		*parts[i] = p;
		if (sep) {
			*sep = 0;
			p = sep + 1;
		}
	}
	return true;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

long mstore__subjects(struct mstore *s, char ***out)
{
	char **v = NULL;
	size_t n = 0, cap = 0, k = 0;

	*out = NULL;
	mstore__lock(s);
	for (int i = 0; i < s->nmetrics; i++) {
		struct mmetric *m = s->metrics[i];

		if (!m || m->dead)
			continue;
		for (uint32_t b = 0; b < m->nbuckets; b++) {
			for (struct mseries *ser = m->buckets[b]; ser;
			     ser = ser->next) {
				if (!ser->subject ||
				    !(ser->flags & SER_HAS_DATA))
					continue;
				if (n == cap) {
					char **nv;

					cap = cap ? 2 * cap : 64;
					nv = realloc(v, cap * sizeof(*v));
					if (!nv)
						goto nomem;
					v = nv;
				}
				v[n] = strdup(strtab__str(&s->strs,
							  ser->subject - 1));
				if (!v[n])
					goto nomem;
				n++;
			}
		}
	}
	mstore__unlock(s);
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(v[k - 1], v[i])) {
			free(v[i]);
			continue;
		}
		v[k++] = v[i];
	}
	*out = v;
	return (long)k;
nomem:
	mstore__unlock(s);
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return -ENOMEM;
}
