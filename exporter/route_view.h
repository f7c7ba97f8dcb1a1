/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The per-route view behind `milometer top` and the /ui page: per HTTPRoute
 * rule and leg, requests per second, success rate and p50/p95/p99 latency.
 *
 * A snapshot holds cumulative figures per row (requests, successes, the
 * latency histogram's cumulative buckets), read from the agent's store
 * (the envoy.* source series), from the debug socket's "top" answer, or
 * from a Prometheus query API. A view compares two snapshots: requests per
 * second over the latest interval, success rate and percentiles over the
 * window between the current snapshot and a base (no base: since the series
 * started, as histogram_quantile() over the raw _bucket series gives).
 * Success: not a 5xx, not aborted. Percentiles: hist_quantile.h, in ms.
 * No libbpf: unit-tested.
 */
#ifndef MM_EXPORTER_ROUTE_VIEW_H
#define MM_EXPORTER_ROUTE_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "exporter/hist_quantile.h"

struct mstore;

enum rt_leg { RT_DOWNSTREAM, RT_UPSTREAM };

#define RT_MAX_BUCKETS 32

struct rt_row {
	char ns[128];
	char route[256]; /* unmatched, unknown: the agent's markers */
	int rule;        /* -1: none (unmatched, unknown) */
	enum rt_leg leg;
	double requests; /* cumulative */
	double ok;       /* cumulative, not 5xx and not aborted */
	double rate; /* requests/s as the source computed it; NaN: from deltas */
	size_t nb;
	struct hist_bucket b[RT_MAX_BUCKETS]; /* cumulative, last le=+Inf */
};

struct rt_snap {
	double t; /* seconds (CLOCK_REALTIME) */
	struct rt_row *rows;
	size_t n, cap;
};

void rt_snap__reset(struct rt_snap *s);
void rt_snap__free(struct rt_snap *s);
/* The row of this key, created empty when new; NULL on ENOMEM. */
struct rt_row *rt_snap__row(struct rt_snap *s, const char *ns,
			    const char *route, int rule, enum rt_leg leg);
/* Add count observations <= le to a row's histogram (buckets merged by le). */
int rt_row__add_bucket(struct rt_row *r, double le, double count);
/* From the store's envoy.* source series (takes the store lock). */
int rt_snap__from_store(struct rt_snap *s, struct mstore *store,
			uint64_t now_ns);
/*
 * From a Prometheus query API (base URL) over the envoy_* series the agents
 * export, summed over nodes; rate() over rate_range ("1m") gives the rows'
 * rate. -errno with what went wrong in err.
 */
int rt_snap__from_prometheus(struct rt_snap *snap, const char *url,
			     const char *rate_range, char *err, size_t errlen);
/* The wire form (the debug socket's "top", /ui/top.json's "snapshot"). */
void rt_snap__write_json(FILE *out, const struct rt_snap *s);
/* Parse the wire form; -EINVAL with a message in err. */
int rt_snap__parse_json(struct rt_snap *s, const char *json, char *err,
			size_t errlen);
/* The rule number of an envoy.cluster_name "httproute/NS/NAME/rule/N", or -1. */
int rt_snap__rule_of_cluster(const char *cluster);

struct rt_stat {
	const struct rt_row *row;
	double requests;        /* cumulative */
	double window_requests; /* within the window */
	double rps;             /* NaN: no previous snapshot yet */
	double success;         /* 0..1, NaN: no requests in the window */
	double p50, p95, p99;   /* ms, NaN: no requests in the window */
};

enum rt_sort {
	RT_SORT_ROUTE,
	RT_SORT_RPS,
	RT_SORT_SUCCESS,
	RT_SORT_P50,
	RT_SORT_P95,
	RT_SORT_P99,
	RT_SORT_REQUESTS
};

/* "route", "rps", "success", "p50", "p95", "p99", "requests"; -EINVAL else. */
int rt_sort__parse(const char *s, enum rt_sort *out);
/*
 * One stat per row of cur (out has cur->n slots): rps against prev (NULL:
 * none, unless the row carries a rate), window figures against base (NULL:
 * cumulative).
 */
void rt_view__compute(const struct rt_snap *cur, const struct rt_snap *prev,
		      const struct rt_snap *base, struct rt_stat *out);
/* Sort: numbers high to low (success low to high: trouble first), then by route. */
void rt_view__sort(struct rt_stat *st, size_t n, enum rt_sort key);
void rt_view__write_table(FILE *out, const struct rt_stat *st, size_t n);
void rt_view__write_json(FILE *out, const struct rt_stat *st, size_t n);

/*
 * The snapshots a viewer (the /ui page) asked for, newest last, at most one
 * per second and RT_HISTORY of them: the charts' "last minutes" and the
 * rate and window figures of the latest one.
 */
#define RT_HISTORY 300

struct rt_history {
	struct rt_snap ring[RT_HISTORY];
	size_t head, count;
};

/* Keep snap (moved in: snap is left empty) unless the newest is under 1 s older. */
void rt_history__add(struct rt_history *h, struct rt_snap *snap);
void rt_history__free(struct rt_history *h);
/*
 * {"time", "window_s", "rows": [the view of the newest, as top -o json],
 *  "history": {"t": [...], "rows": [{"key", "rps": [...], "p95_ms": [...]}]}}
 * rps per interval, p95 over each interval; window figures over window_s.
 */
void rt_history__write_json(const struct rt_history *h, FILE *out,
			    double window_s);

#endif /* MM_EXPORTER_ROUTE_VIEW_H */
