// SPDX-License-Identifier: Apache-2.0
/*
 * The metric store: see metric_store.h.
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
#include <stdlib.h>
#include <string.h>

#include "exporter/hist_exp.h"
#include "exporter/hist_explicit.h"
#include "exporter/metric_store.h"

#define DEFAULT_MAX_SERIES 10000
#define OVERFLOW_KEY "otel.metric.overflow"
#define OVERFLOW_VALUE "true"
#define MAX_LABELS 128

/* ---------------------------------------------------------------- strings */

struct istr {
	uint32_t refs;
	uint32_t hash;
	uint32_t next; /* id + 1 of the next string in the bucket, 0 ends */
	char s[];
};

struct strtab {
	struct istr **ents; /* by id; NULL = free id */
	uint32_t nents, cap;
	uint32_t *free_ids;
	uint32_t nfree;
	uint32_t *buckets; /* id + 1, 0 = empty */
	uint32_t nbuckets; /* power of two */
	uint32_t nlive;
};

/* glibc's chunk size for a request: what "resident" really costs. */
static size_t heap_cost(size_t req)
{
	size_t c = (req + 8 + 15) & ~(size_t)15;

	return c < 32 ? 32 : c;
}

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u; /* FNV-1a */

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 16777619u;
	}
	return h;
}

static long strtab_find(const struct strtab *t, const char *s, uint32_t h)
{
	uint32_t e;

	if (!t->nbuckets)
		return -1;
	for (e = t->buckets[h & (t->nbuckets - 1)]; e; e = t->ents[e - 1]->next)
		if (t->ents[e - 1]->hash == h && !strcmp(t->ents[e - 1]->s, s))
			return e - 1;
	return -1;
}

static int strtab_grow_buckets(struct strtab *t, size_t *bytes)
{
	uint32_t n = t->nbuckets ? t->nbuckets * 2 : 256, i, *b;

	b = calloc(n, sizeof(*b));
	if (!b)
		return -ENOMEM;
	for (i = 0; i < t->nents; i++) {
		struct istr *e = t->ents[i];

		if (!e)
			continue;
		e->next = b[e->hash & (n - 1)];
		b[e->hash & (n - 1)] = i + 1;
	}
	if (t->buckets)
		*bytes -= heap_cost(t->nbuckets * sizeof(*b));
	*bytes += heap_cost(n * sizeof(*b));
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
	return 0;
}

/* Id of s with one more reference, creating it; -ENOMEM on failure. */
static long strtab_get(struct strtab *t, const char *s, size_t *bytes)
{
	uint32_t h = hash_str(s), id;
	size_t len;
	long found = strtab_find(t, s, h);
	struct istr *e;

	if (found >= 0) {
		t->ents[found]->refs++;
		return found;
	}
	if (t->nlive >= t->nbuckets && strtab_grow_buckets(t, bytes))
		return -ENOMEM;
	if (!t->nfree && t->nents == t->cap) {
		uint32_t cap = t->cap ? t->cap * 2 : 256;
		struct istr **ents = realloc(t->ents, cap * sizeof(*ents));
		uint32_t *fr;

		if (!ents)
			return -ENOMEM;
		t->ents = ents;
		fr = realloc(t->free_ids, cap * sizeof(*fr));
		if (!fr)
			return -ENOMEM;
		t->free_ids = fr;
		if (t->cap)
			*bytes -= heap_cost(t->cap * (sizeof(*ents) + sizeof(*fr)));
		*bytes += heap_cost(cap * (sizeof(*ents) + sizeof(*fr)));
		t->cap = cap;
	}
	len = strlen(s);
	e = malloc(sizeof(*e) + len + 1);
	if (!e)
		return -ENOMEM;
	*bytes += heap_cost(sizeof(*e) + len + 1);
	memcpy(e->s, s, len + 1);
	e->refs = 1;
	e->hash = h;
	id = t->nfree ? t->free_ids[--t->nfree] : t->nents++;
	t->ents[id] = e;
	e->next = t->buckets[h & (t->nbuckets - 1)];
	t->buckets[h & (t->nbuckets - 1)] = id + 1;
	t->nlive++;
	return id;
}

static void strtab_put(struct strtab *t, uint32_t id, size_t *bytes)
{
	struct istr *e = t->ents[id];
	uint32_t *pp;

	if (--e->refs)
		return;
	for (pp = &t->buckets[e->hash & (t->nbuckets - 1)]; *pp - 1 != id;
	     pp = &t->ents[*pp - 1]->next)
		;
	*pp = e->next;
	*bytes -= heap_cost(sizeof(*e) + strlen(e->s) + 1);
	free(e);
	t->ents[id] = NULL;
	t->free_ids[t->nfree++] = id;
	t->nlive--;
}

static const char *strtab_str(const struct strtab *t, uint32_t id)
{
	return t->ents[id]->s;
}

static void strtab_free(struct strtab *t)
{
	uint32_t i;

	for (i = 0; i < t->nents; i++)
		free(t->ents[i]);
	free(t->ents);
	free(t->free_ids);
	free(t->buckets);
}

/* ----------------------------------------------------------------- series */

enum {
	SER_HAS_DATA = 1 << 0, /* recorded at least once */
	SER_DIRTY = 1 << 1,    /* recorded since the last delta collection */
	SER_OVERFLOW = 1 << 2,
	SER_ORPHAN = 1 << 3,   /* its metric was removed while held */
};

struct mseries {
	struct mseries *next;
	struct mmetric *m;
	uint64_t start_ns; /* cumulative start */
	uint64_t last_ns;  /* last update, for idle expiry */
	uint32_t hash;
	uint32_t holds;
	uint16_t nlabels;
	uint8_t flags;
	uint8_t pad;
	uint32_t labels[]; /* key id, value id; pairs sorted by key */
	/*
	 * Then, 8-byte aligned: the cumulative accumulator, [the delta
	 * accumulator].
	 */
};

union sum_acc {
	double d;
	int64_t i;
};

struct mmetric {
	struct mmetric_desc desc; /* owned copies; bounds always set */
	struct mstore *store;
	bool has_delta;
	bool dead;
	uint32_t acc_size;
	uint32_t max_buckets;
	int32_t max_scale;
	struct mseries **buckets;
	uint32_t nbuckets;
	uint32_t nregular; /* live series except overflow */
	struct mseries *overflow;
	uint32_t nheld_dead; /* series kept after removal */
	/* delta points start where the previous delta collection ended */
	uint64_t last_delta_ns;
};

struct mstore {
	pthread_mutex_t lock;
	struct mstore_opts opts;
	struct mmetric **metrics;
	int nmetrics, cap;
	struct strtab strs;
	size_t bytes;
	uint64_t series_active, series_overflowed, series_expired;
	/* collection scratch, reused across collections */
	struct mseries **sv;
	struct mpoint_view *pv;
	struct mhist_explicit_view *ev;
	struct mhist_exp_view *xv;
	size_t scap;
	struct mlabel *lv;
	size_t lcap;
};

static size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static size_t ser_data_off(uint16_t nlabels)
{
	return align8(sizeof(struct mseries) + 2 * nlabels * sizeof(uint32_t));
}

static size_t ser_size(const struct mmetric *m, uint16_t nlabels)
{
	return ser_data_off(nlabels) + (m->has_delta ? 2 : 1) * m->acc_size;
}

static void *ser_acc(struct mseries *ser, bool delta)
{
	char *p = (char *)ser + ser_data_off(ser->nlabels);

	return p + (delta ? ser->m->acc_size : 0);
}

static bool is_exp(const struct mmetric *m)
{
	return m->desc.instrument == MI_HISTOGRAM &&
	       m->desc.hist == MH_EXPONENTIAL;
}

static void acc_init(struct mmetric *m, void *acc)
{
	if (m->desc.instrument != MI_HISTOGRAM)
		memset(acc, 0, m->acc_size);
	else if (is_exp(m))
		hist_exp__init(acc, m->max_scale);
	else
		hist_explicit__reset(acc, m->desc.nbounds);
}

static void ser_free(struct mstore *s, struct mseries *ser)
{
	struct mmetric *m = ser->m;
	uint32_t i;

	if (is_exp(m)) {
		s->bytes -= hist_exp__free(ser_acc(ser, false));
		if (m->has_delta)
			s->bytes -= hist_exp__free(ser_acc(ser, true));
	}
	for (i = 0; i < 2u * ser->nlabels; i++)
		strtab_put(&s->strs, ser->labels[i], &s->bytes);
	s->bytes -= heap_cost(ser_size(m, ser->nlabels));
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

static void table_unlink(struct mmetric *m, struct mseries *ser)
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
		s->bytes -= heap_cost(m->nbuckets * sizeof(*b));
	s->bytes += heap_cost(n * sizeof(*b));
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
			ser_free(s, ser);
		}
	}
	if (m->buckets)
		s->bytes -= heap_cost(m->nbuckets * sizeof(*m->buckets));
	free(m->buckets);
	free((char *)m->desc.name);
	free((char *)m->desc.description);
	free((char *)m->desc.unit);
	free((double *)m->desc.bounds);
	s->bytes -= heap_cost(sizeof(*m));
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
	strtab_free(&s->strs);
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
		return m->max_buckets == (d->exp_max_buckets ?
			d->exp_max_buckets : HIST_EXP_DEFAULT_MAX_BUCKETS) &&
		       m->max_scale == (d->exp_max_scale ? d->exp_max_scale :
					HIST_EXP_MAX_SCALE);
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
		       d->exp_max_buckets == 1 ? -EINVAL : 0;
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
			m->max_buckets = d->exp_max_buckets ?
				d->exp_max_buckets : HIST_EXP_DEFAULT_MAX_BUCKETS;
			m->max_scale = d->exp_max_scale ? d->exp_max_scale :
				HIST_EXP_MAX_SCALE;
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
		s->bytes += heap_cost(n * sizeof(*bc));
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
	s->bytes += heap_cost(sizeof(*m));
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
			table_unlink(m, ser);
			ser_free(s, ser);
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
	s->bytes += heap_cost(size);
	ser->m = m;
	ser->flags = flags;
	for (i = 0; i < 2 * n; i++) {
		id = strtab_get(&s->strs, i & 1 ? l[i / 2].value : l[i / 2].key,
				&s->bytes);
		if (id < 0) {
			ser->nlabels = i / 2;
			if (i & 1)
				strtab_put(&s->strs, ser->labels[i - 1],
					   &s->bytes);
			goto fail;
		}
		ser->labels[i] = (uint32_t)id;
	}
	ser->nlabels = n;
	ser->hash = hash_ids(ser->labels, 2 * n);
	acc_init(m, ser_acc(ser, false));
	if (m->has_delta)
		acc_init(m, ser_acc(ser, true));
	table_insert(m, ser);
	s->series_active++;
	return ser;
fail:
	/* ser_free() sizes by nlabels; charge what was added back */
	s->bytes += heap_cost(ser_size(m, ser->nlabels)) - heap_cost(size);
	ser_free(s, ser);
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
		const char *str = i & 1 ? sorted[i / 2].value : sorted[i / 2].key;
		long id = strtab_find(&s->strs, str, hash_str(str));

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
	table_unlink(m, ser);
	ser_free(s, ser);
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
		acc_add(m, delta, m->desc.instrument == MI_COUNTER && v < old ?
			v : v - old);
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
		c = strcmp(strtab_str(t, x->labels[i]),
			   strtab_str(t, y->labels[i]));
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

static void fill_point(struct mstore *s, struct mmetric *m,
		       struct mseries *ser, bool delta, uint64_t now_ns,
		       size_t k, struct mlabel *lv)
{
	struct mpoint_view *p = &s->pv[k];
	void *acc = ser_acc(ser, delta);
	uint16_t i;

	memset(p, 0, sizeof(*p));
	for (i = 0; i < ser->nlabels; i++) {
		lv[i].key = strtab_str(&s->strs, ser->labels[2 * i]);
		lv[i].value = strtab_str(&s->strs, ser->labels[2 * i + 1]);
	}
	p->labels = lv;
	p->nlabels = ser->nlabels;
	p->start_ns = delta && m->last_delta_ns ? m->last_delta_ns :
		      ser->start_ns;
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
		x->pos_n = h->pos.n;
		x->neg_offset = h->neg.offset;
		x->neg_counts = h->neg.counts;
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
		acc_init(m, acc);
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
				table_unlink(m, ser);
				if (ser == m->overflow)
					m->overflow = NULL;
				else
					m->nregular--;
				s->series_active--;
				s->series_expired++;
				ser_free(s, ser);
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
			err = collect_metric(s, s->metrics[i], view, now_ns,
					     fn, ctx);
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
