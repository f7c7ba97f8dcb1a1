/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to policy/model/metric_store*.c: the store's memory layout (see
 * metric_store.c) shared by the series/metrics code (metric_store.c) and
 * the collection code (metric_store_collect.c).
 */
#ifndef MM_EXPORTER_METRIC_STORE_IMPL_H
#define MM_EXPORTER_METRIC_STORE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/model/metric_store.h"
#include "policy/model/strtab.h"

#define DEFAULT_MAX_SERIES 10000
#define OVERFLOW_KEY       "otel.metric.overflow"
#define OVERFLOW_VALUE     "true"
#define MAX_LABELS         128

enum {
	SER_HAS_DATA = 1 << 0, /* recorded at least once */
	SER_DIRTY = 1 << 1,    /* recorded since the last delta collection */
	SER_OVERFLOW = 1 << 2,
	SER_ORPHAN = 1 << 3, /* its metric was removed while held */
	/* bound to two different subjects: shown to full readers only */
	SER_SUBJECT_MIXED = 1 << 4,
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
	uint32_t subject;  /* strtab id + 1 of its subject, 0: none */
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

static inline size_t align8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

static inline size_t ser_data_off(uint16_t nlabels)
{
	return align8(sizeof(struct mseries) + 2 * nlabels * sizeof(uint32_t));
}

static inline size_t ser_size(const struct mmetric *m, uint16_t nlabels)
{
	return ser_data_off(nlabels) + (m->has_delta ? 2 : 1) * m->acc_size;
}

static inline void *ser_acc(struct mseries *ser, bool delta)
{
	char *p = (char *)ser + ser_data_off(ser->nlabels);

	return p + (delta ? ser->m->acc_size : 0);
}

static inline bool is_exp(const struct mmetric *m)
{
	return m->desc.instrument == MI_HISTOGRAM &&
	       m->desc.hist == MH_EXPONENTIAL;
}

/* A fresh accumulator for a series of m. */
void mstore_impl__acc_init(struct mmetric *m, void *acc);
/* Free a series and drop its label strings (store lock held). */
void mstore_impl__ser_free(struct mstore *s, struct mseries *ser);
/* Take a series out of its metric's hash table. */
void mstore_impl__table_unlink(struct mmetric *m, struct mseries *ser);

#endif /* MM_EXPORTER_METRIC_STORE_IMPL_H */
