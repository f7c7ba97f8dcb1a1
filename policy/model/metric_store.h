/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The in-memory metric store every producer writes into (the data path's
 * source metrics, the policy engine's target metrics, self-metrics) and every
 * exporter reads from (Prometheus pull, OTLP push). Pure C, no libbpf.
 *
 * Model: the OpenTelemetry metrics data model. A metric has a descriptor and
 * a set of series (one per distinct label set). Series count per metric is
 * capped; past the cap points go to one overflow series labelled
 * otel.metric.overflow="true", as the OTel SDK does. Series idle for longer
 * than the expiry are dropped at collection unless a producer holds them.
 *
 * Locking: one mutex per store. Producers take it once per batch with
 * mstore__lock()/mstore__unlock() around mseries_* calls; collection takes it
 * itself. The mutex is recursive: mstore__add_metric/find/remove/stats and
 * mstore__hold/release lock internally and may also be called with the lock
 * held.
 */
#ifndef MM_EXPORTER_METRIC_STORE_H
#define MM_EXPORTER_METRIC_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum minstrument {
	MI_COUNTER, /* monotonic sum */
	MI_UPDOWN,  /* non-monotonic sum */
	MI_GAUGE,
	MI_HISTOGRAM,
};

enum mtemporality {
	MT_CUMULATIVE,
	MT_DELTA,
};

enum mhist_kind {
	MH_EXPLICIT,    /* explicit bucket bounds */
	MH_EXPONENTIAL, /* base-2 exponential, OTel data model */
};

struct mmetric_desc {
	const char *name; /* OTel name, e.g. envoy.http.downstream_rq_time */
	const char *description;
	/* UCUM-ish as written by the definition: "s", "seconds", "ms", "1", "By" */
	const char *unit;
	enum minstrument instrument;
	enum mtemporality temporality; /* what exporters report */
	bool is_int;                   /* sums/gauges carry int64 points */
	enum mhist_kind hist;          /* histograms only */
	const double *bounds; /* MH_EXPLICIT: NULL = OTel default bounds */
	size_t nbounds;
	uint32_t exp_max_buckets; /* MH_EXPONENTIAL: 0 = 160 */
	int32_t exp_max_scale;    /* MH_EXPONENTIAL: 0 = 20 */
};

struct mlabel {
	const char *key;
	const char *value;
};

struct mstore_opts {
	uint32_t max_series_per_metric; /* 0 = 10000 */
	uint64_t idle_expiry_ns;        /* 0 = never */
	/*
	 * Keep a second accumulator per delta series for an OTLP reader while
	 * Prometheus reads cumulative totals; off saves memory when no OTLP.
	 */
	bool keep_delta;
};

struct mstore;
struct mseries;

struct mstore *mstore__new(const struct mstore_opts *opts);
void mstore__free(struct mstore *s);

/*
 * Register a metric. The descriptor's strings and bounds are copied. The same
 * name with an identical descriptor returns the same id; a different one
 * returns -EEXIST. Returns metric id >= 0 or -errno.
 */
int mstore__add_metric(struct mstore *s, const struct mmetric_desc *desc);
int mstore__find_metric(struct mstore *s, const char *name);
/* Drop a metric and all its series (policy removed). Held series stay valid
 * until released. */
int mstore__remove_metric(struct mstore *s, int metric_id);

void mstore__lock(struct mstore *s);
void mstore__unlock(struct mstore *s);

/*
 * Find or create the series with these labels (any order; copied). Returns
 * the overflow series past the cap, NULL only on ENOMEM. The caller holds the
 * lock. mstore__hold() keeps a series from expiring while a producer caches
 * the pointer; every hold is paired with mstore__release().
 */
struct mseries *mstore__series(struct mstore *s, int metric_id,
			       const struct mlabel *labels, size_t nlabels);
/*
 * (Details of mstore__series: NULL also for an unknown or removed metric id
 * and for more than 128 labels. A NULL key is skipped, a NULL value is "";
 * with a repeated key the last one wins. The limit counts the overflow
 * series as the OTel SDK does: max_series_per_metric - 1 label sets, then
 * overflow. A series shows up in collections once something was recorded.)
 */
void mstore__hold(struct mseries *ser);
void mstore__release(struct mstore *s, struct mseries *ser);

/*
 * The object a series is about (its subject), which is what authorization
 * decides on: a series is shown to a caller by the object it is bound to,
 * never by its label values (a policy can write any string into a label).
 * Written "group\x1fresource\x1fnamespace\x1fname" by msubject__format().
 * A series bound to two different subjects (a policy whose labels merge
 * series of several objects, or the overflow series) counts as bound to
 * none: only a reader of everything sees it. Lock held; -ENOMEM.
 */
#define MSUBJECT_SEP '\x1f'
int mstore__bind(struct mstore *s, struct mseries *ser, const char *subject);
/* Into buf; false when it does not fit. */
bool msubject__format(char *buf, size_t len, const char *group,
		      const char *resource, const char *ns, const char *name);
/* Split a subject into its four parts (copied into buf). */
struct msubject {
	const char *group, *resource, *ns, *name;
};
bool msubject__parse(const char *subject, struct msubject *out, char *buf,
		     size_t len);
/*
 * The distinct subjects of series that hold data, malloc'd (free each and
 * the array). Returns how many or -ENOMEM.
 */
long mstore__subjects(struct mstore *s, char ***out);

/*
 * Producers (lock held). now_ns is CLOCK_REALTIME in ns. The first record
 * sets the series' start time. NaN is ignored; counters ignore negative
 * adds; a counter total given to mseries__set() that goes down is taken as
 * a source restart (new start time). mseries__observe() on a sum adds, on a
 * gauge sets; mseries__add() on a histogram observes.
 */
void mseries__add(struct mseries *ser, double v,
		  uint64_t now_ns); /* sums: += v */
void mseries__set(struct mseries *ser, double v,
		  uint64_t now_ns); /* gauges; cumulative sums given as totals */
void mseries__observe(struct mseries *ser, double v,
		      uint64_t now_ns); /* histograms */

/* A point as exporters see it during collection. */
struct mhist_explicit_view {
	const double *bounds;
	size_t nbounds;
	const uint64_t *counts; /* nbounds + 1 */
};

struct mhist_exp_view {
	int32_t scale;
	uint64_t zero_count;
	int32_t pos_offset;
	const void *pos_counts; /* hist_exp__count_at(pos_counts, pos_width, i) */
	uint8_t pos_width;
	size_t pos_n;
	int32_t neg_offset;
	const void *neg_counts;
	uint8_t neg_width;
	size_t neg_n;
};

struct mpoint_view {
	const struct mlabel *labels; /* sorted by key */
	size_t nlabels;
	uint64_t start_ns;
	uint64_t time_ns;
	double value;   /* sums, gauges */
	int64_t ivalue; /* when desc->is_int */
	/* histograms */
	uint64_t count;
	double sum;
	double min, max; /* valid when count > 0 */
	const struct mhist_explicit_view *explicit_h;
	const struct mhist_exp_view *exp_h;
	/* what the series is bound to (mstore__bind), NULL: nothing single */
	const char *subject;
};

/*
 * Visit every metric with its points. temporality selects the view: for a
 * delta metric, MT_DELTA yields what accumulated since the previous MT_DELTA
 * collection (and resets it; start_ns advances), MT_CUMULATIVE yields totals
 * since the series started (Prometheus). Cumulative metrics are always
 * reported cumulative. The callback returns 0 to go on, negative to stop.
 *
 * (Details: desc->temporality as passed to the callback says what the points
 * are: MT_DELTA only for a delta metric collected with MT_DELTA in a store
 * with keep_delta; otherwise MT_CUMULATIVE. Histogram descs always carry
 * their effective bounds. A delta point starts at the previous MT_DELTA
 * collection (or at the series' first record), and a series with nothing new
 * has no delta point. Points are sorted by label set. Idle series expire
 * here, except held ones and ones whose delta no MT_DELTA collection has
 * reported yet. The callback runs under the store lock: it must not block for long.
 * Returns 0, the callback's negative value, or -ENOMEM.)
 */
typedef int (*mstore_visit_fn)(void *ctx, const struct mmetric_desc *desc,
			       const struct mpoint_view *points,
			       size_t npoints);
int mstore__collect(struct mstore *s, enum mtemporality view, uint64_t now_ns,
		    mstore_visit_fn fn, void *ctx);

struct mstore_stats {
	uint64_t series_active;
	uint64_t series_overflowed; /* lookups routed to overflow series */
	uint64_t series_expired;
	uint64_t bytes; /* heap held by series, approximate */
};
void mstore__stats(struct mstore *s, struct mstore_stats *st);

/*
 * The bounds a histogram without bounds gets: OTel HTTP semconv advice
 * (0.005 .. 10) for unit "s" or "seconds", the SDK's default
 * (hist_explicit__sdk_bounds) otherwise.
 */
void mstore__default_bounds_for_unit(const char *unit, const double **bounds,
				     size_t *nbounds);

#endif /* MM_EXPORTER_METRIC_STORE_H */
