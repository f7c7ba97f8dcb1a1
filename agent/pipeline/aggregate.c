// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agent/pipeline/aggregate.h"
#include "agent/pipeline/deferred.h"
#include "agent/pipeline/exchange.h"
#include "bpf/milometer.h"
#include "exporter/metric_doc.h"
#include "policy/model/metric_store.h"
#include "policy/cel/cel.h"
#include "policy/contract/policy_engine.h"
#include "policy/gateway/route_compile.h"
#include "policy/gateway/route_match.h"
#include "policy/source/source_catalogue.h"

enum { SRC_DS_TOTAL, SRC_DS_TIME, SRC_US_TOTAL, SRC_US_TIME, SRC__N };

/* policy/source/source_catalogue.h: what policies may select */
#define SRC_LABELS                                                             \
	SRC_ATTR_ROUTE "," SRC_ATTR_NAMESPACE "," SRC_ATTR_GATEWAY             \
		       "," SRC_ATTR_CLUSTER "," SRC_ATTR_METHOD                \
		       "," SRC_ATTR_STATUS "," SRC_ATTR_STATUS_CLASS           \
		       "," SRC_ATTR_ABORTED "," SRC_ATTR_GRPC_STATUS
#define SRC_WHEN "unless --no-source-metrics"
#define SRC_NOTE                                                                \
	"`k8s_httproute_name` is `unmatched` for requests no rule matched and " \
	"`unknown` for requests whose route could not be told; "                \
	"`envoy_cluster_name` (httproute/NS/NAME/rule/N) names the rule."

static const struct metric_doc src_docs[SRC__N] = {
	[SRC_DS_TOTAL] = { SRC_METRIC_DS_TOTAL,
			   "Downstream (client to proxy) requests, by HTTPRoute rule.",
			   "1", MI_COUNTER, true, SRC_LABELS, SRC_WHEN,
			   SRC_NOTE },
	[SRC_DS_TIME] = { SRC_METRIC_DS_TIME,
			  "Downstream request time: first request byte received to last response byte sent.",
			  "ms", MI_HISTOGRAM, false, SRC_LABELS, SRC_WHEN,
			  "Buckets: Envoy's default bounds (0.5 ms to 1 h)." },
	[SRC_US_TOTAL] = { SRC_METRIC_US_TOTAL,
			   "Upstream (proxy to backend) requests, by HTTPRoute rule.",
			   "1", MI_COUNTER, true, SRC_LABELS, SRC_WHEN, NULL },
	[SRC_US_TIME] = { SRC_METRIC_US_TIME,
			  "Upstream request time: first upstream request byte sent to last response byte received.",
			  "ms", MI_HISTOGRAM, false, SRC_LABELS, SRC_WHEN,
			  NULL },
};

int aggregate__write_reference(FILE *out)
{
	return metric_doc__write_section(
		out, "Source metrics (per HTTPRoute rule)",
		"What the data path measured, named as Envoy names them so that "
		"dashboards written for Envoy read them; MetricPolicies derive the "
		"target metrics from these.",
		src_docs, SRC__N);
}

static const char *const method_names[MM_M__COUNT] = {
	"_OTHER", "GET",     "HEAD",    "POST",  "PUT",
	"DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH",
};

struct key_entry {
	uint64_t key; /* 0: empty slot */
	uint64_t last_ns;
	struct mseries *total, *time;
	struct pe_binding *b_total, *b_time;
	uint64_t pe_gen;
};

#define DEFERRED_MAX_AGE_NS (300ULL * 1000000000ULL) /* a lost exchange event */

struct aggregate {
	struct mstore *store;
	aggregate_table_fn table;
	void *table_ctx;
	struct policy_engine *pe;
	int metric[SRC__N];
	bool export_sources;
	struct key_entry *tab;
	size_t cap, used;
	struct deferred_tab *def;
	uint64_t now;
	struct aggregate_stats st;
};

static uint64_t now_realtime(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

struct aggregate *aggregate__new(struct mstore *store, aggregate_table_fn table,
				 void *table_ctx, bool export_sources)
{
	struct aggregate *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	a->store = store;
	a->table = table;
	a->table_ctx = table_ctx;
	a->export_sources = export_sources;
	a->cap = 1024;
	a->tab = calloc(a->cap, sizeof(*a->tab));
	a->def = deferred__new();
	if (!a->tab || !a->def)
		goto fail;
	for (int i = 0; i < SRC__N; i++) {
		struct mmetric_desc d = metric_doc__desc(&src_docs[i]);

		if (d.instrument == MI_HISTOGRAM) {
			d.hist = MH_EXPLICIT;
			d.bounds = source_catalogue__envoy_bounds;
			d.nbounds = source_catalogue__envoy_nbounds;
		}
		a->metric[i] = export_sources ? mstore__add_metric(store, &d)
					      : -1;
		if (export_sources && a->metric[i] < 0)
			goto fail;
	}
	return a;
fail:
	aggregate__free(a);
	return NULL;
}

static void entry_release(struct aggregate *a, struct key_entry *e)
{
	if (e->total)
		mstore__release(a->store, e->total);
	if (e->time)
		mstore__release(a->store, e->time);
	pe_binding__free(e->b_total);
	pe_binding__free(e->b_time);
	memset(e, 0, sizeof(*e));
}

void aggregate__free(struct aggregate *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->cap && a->tab; i++)
		if (a->tab[i].key)
			entry_release(a, &a->tab[i]);
	free(a->tab);
	deferred__free(a->def);
	free(a);
}

void aggregate__set_now(struct aggregate *a, uint64_t now_ns)
{
	a->now = now_ns;
}

void aggregate__set_engine(struct aggregate *a, struct policy_engine *pe)
{
	a->pe = pe;
}

static inline uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

/*
 * Packed key, never 0: gen 16 bits | route 17 | rule 8 | method 4 |
 * status 10 | grpc 5 | leg 1 | aborted 1 | 1 (non-zero marker), high bits
 * first. The unmatched and unknown series are the same in every
 * generation: their gen bits hold the gateway slot instead. Route ids at or
 * past ROUTE_KEY_SPECIAL share the three special routes' keys (unmatched,
 * defer, unknown): 131 000 routes per table.
 */
#define ROUTE_KEY_BITS    17
#define ROUTE_KEY_MASK    ((1u << ROUTE_KEY_BITS) - 1)
#define ROUTE_KEY_SPECIAL (ROUTE_KEY_MASK - 2)

static uint64_t pack_key(uint32_t gen, uint32_t route, uint32_t rule,
			 uint32_t method, uint32_t status, uint32_t grpc,
			 uint32_t leg, bool aborted)
{
	return ((uint64_t)(gen & 0xffff) << 47) |
	       ((uint64_t)(route & ROUTE_KEY_MASK) << 30) |
	       ((uint64_t)(rule & 0xff) << 22) |
	       ((uint64_t)(method & 0xf) << 18) |
	       ((uint64_t)(status > 999 ? 999 : status) << 8) |
	       ((uint64_t)(grpc > 17 ? 0 : grpc) << 3) |
	       ((uint64_t)(leg & 1) << 2) | ((uint64_t)aborted << 1) | 1;
}

static int grow(struct aggregate *a)
{
	size_t ncap = a->cap * 2;
	struct key_entry *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (size_t i = 0; i < a->cap; i++) {
		size_t j;

		if (!a->tab[i].key)
			continue;
		for (j = mix(a->tab[i].key) & (ncap - 1); n[j].key;
		     j = (j + 1) & (ncap - 1))
			;
		n[j] = a->tab[i];
	}
	free(a->tab);
	a->tab = n;
	a->cap = ncap;
	return 0;
}

struct labels {
	struct mlabel l[10];
	struct cel_attr c[10];
	size_t n;
	char cluster[512], status[8], class[4], grpc[4];
	char subject[768]; /* the HTTPRoute (mstore__bind), "" for none */
};

static void add_label(struct labels *lb, const char *k, const char *v)
{
	lb->l[lb->n].key = k;
	lb->l[lb->n].value = v;
	lb->c[lb->n].key = k;
	lb->c[lb->n].value = v;
	lb->n++;
}

static void build_labels(const struct route_table *t, uint32_t gw,
			 uint32_t route, uint32_t rule, uint32_t method,
			 uint32_t status, uint32_t grpc, bool aborted,
			 struct labels *lb)
{
	lb->n = 0;
	lb->subject[0] = 0;
	if (t && route < t->nroutes) {
		const struct rc_route *r = &t->routes[route];

		if (!msubject__format(lb->subject, sizeof(lb->subject),
				      "gateway.networking.k8s.io", "httproutes",
				      r->ns, r->name))
			lb->subject[0] = 0;

		add_label(lb, SRC_ATTR_ROUTE, r->name);
		add_label(lb, SRC_ATTR_NAMESPACE, r->ns);
		if (r->gw_name)
			add_label(lb, SRC_ATTR_GATEWAY, r->gw_name);
		if (!route_compile__cluster_name(t, route, rule, lb->cluster,
						 sizeof(lb->cluster)))
			add_label(lb, SRC_ATTR_CLUSTER, lb->cluster);
	} else {
		add_label(lb, SRC_ATTR_ROUTE,
			  route == MM_ROUTE_UNMATCHED ? "unmatched"
						      : "unknown");
		/* several Gateways on the node: say whose request it was */
		if (t && gw < t->nslots && t->slots[gw].gw_name)
			add_label(lb, SRC_ATTR_GATEWAY, t->slots[gw].gw_name);
	}
	add_label(lb, SRC_ATTR_METHOD,
		  method_names[method < MM_M__COUNT ? method : 0]);
	snprintf(lb->status, sizeof(lb->status), "%u", aborted ? 0 : status);
	add_label(lb, SRC_ATTR_STATUS, lb->status);
	if (aborted) {
		add_label(lb, SRC_ATTR_ABORTED, "true");
	} else if (status >= 100 && status <= 599) {
		snprintf(lb->class, sizeof(lb->class), "%uxx", status / 100);
		add_label(lb, SRC_ATTR_STATUS_CLASS, lb->class);
	}
	/* gRPC (HTTP/2 trailers), as OpenTelemetry's semantic conventions say */
	if (grpc && grpc <= 17) {
		snprintf(lb->grpc, sizeof(lb->grpc), "%u", grpc - 1);
		add_label(lb, SRC_ATTR_GRPC_STATUS, lb->grpc);
	}
}

static void bind_entry(struct aggregate *a, struct key_entry *e, int leg,
		       const struct labels *lb)
{
	int total = leg ? SRC_US_TOTAL : SRC_DS_TOTAL;
	int time = leg ? SRC_US_TIME : SRC_DS_TIME;

	if (!a->pe)
		return;
	pe_binding__free(e->b_total);
	pe_binding__free(e->b_time);
	e->b_total = e->b_time = NULL;
	policy_engine__bind(a->pe, src_docs[total].name, lb->c, lb->n,
			    &e->b_total);
	policy_engine__bind(a->pe, src_docs[time].name, lb->c, lb->n,
			    &e->b_time);
	e->pe_gen = policy_engine__generation(a->pe);
}

static struct key_entry *lookup(struct aggregate *a, uint64_t key,
				const struct route_table *t, uint32_t gw,
				uint32_t route, uint32_t rule, uint32_t method,
				uint32_t status, uint32_t grpc, int leg,
				bool aborted)
{
	size_t i = mix(key) & (a->cap - 1);
	struct key_entry *e;
	struct labels lb;

	for (; a->tab[i].key; i = (i + 1) & (a->cap - 1))
		if (a->tab[i].key == key)
			return &a->tab[i];
	if ((a->used + 1) * 2 > a->cap) {
		if (grow(a))
			return NULL;
		return lookup(a, key, t, gw, route, rule, method, status, grpc,
			      leg, aborted);
	}
	e = &a->tab[i];
	e->key = key;
	a->used++;
	a->st.keys = a->used;
	build_labels(t, gw, route, rule, method, status, grpc, aborted, &lb);
	if (a->export_sources) {
		e->total = mstore__series(
			a->store, a->metric[leg ? SRC_US_TOTAL : SRC_DS_TOTAL],
			lb.l, lb.n);
		e->time = mstore__series(
			a->store, a->metric[leg ? SRC_US_TIME : SRC_DS_TIME],
			lb.l, lb.n);
		/* no subject (unmatched, unknown): full readers only */
		if (e->total && lb.subject[0])
			mstore__bind(a->store, e->total, lb.subject);
		if (e->time && lb.subject[0])
			mstore__bind(a->store, e->time, lb.subject);
		if (e->total)
			mstore__hold(e->total);
		if (e->time)
			mstore__hold(e->time);
	}
	bind_entry(a, e, leg, &lb);
	return e;
}

static void on_head(struct aggregate *a, const struct mm_http_event *e,
		    size_t size)
{
	const struct route_table *t = a->table(a->table_ctx, e->route_gen);
	struct route_result res;
	struct deferred d = {
		.conn_id = e->conn_id,
		.seq = e->req_seq,
		.gen = e->route_gen,
		.route_id = MM_ROUTE_UNKNOWN,
		.at_ns = now_realtime(),
	};
	size_t len = e->head_len;

	a->st.heads++;
	if (len > size - sizeof(*e))
		len = size - sizeof(*e);
	if (!t) {
		a->st.retired_gen++;
	} else if (route_match__lookup_head(t, e->gw, e->status, e->head, len,
					    e->flags & MM_EV_HEAD_TRUNC,
					    &res) < 0 ||
		   res.route_id == MM_ROUTE_UNKNOWN) {
		/* a cut head that lost what decides stays "unknown" */
		a->st.deferred_unknown++;
	} else {
		d.route_id = res.route_id;
		d.rule_idx = res.rule_idx;
		a->st.deferred_resolved++;
	}
	if (deferred__put(a->def, &d))
		a->st.deferred_unknown++;
}

static void on_exchange(struct aggregate *a, const struct exchange *e)
{
	uint32_t route = e->route_id, rule = e->rule_idx, gen = e->route_gen;
	/* in the key and labels as status + 1, 0 for none */
	uint32_t grpc = e->grpc_status >= 0 && e->grpc_status <= 16
				? (uint32_t)e->grpc_status + 1
				: 0;
	/*
	 * Cut short after the final response head: counted with that status,
	 * as nginx logs it and Envoy counts upstream_rq_2xx on headers; only
	 * an exchange that never got a final status is "aborted".
	 */
	bool aborted = (e->flags & MM_EV_ABORTED) && e->status < 100;
	const struct route_table *t;
	struct key_entry *ke;
	uint64_t now = a->now ? a->now : now_realtime();
	double ms;

	a->st.exchanges++;
	if (aborted)
		a->st.aborted++;
	if (route == MM_ROUTE_DEFER) {
		bool up = e->leg == MM_LEG_UPSTREAM;
		uint64_t conn = e->conn_id;
		uint32_t seq = e->req_seq;
		/* an upstream leg deferred on its own head, else its parent's */
		const struct deferred *d = deferred__get(a->def, conn, seq);

		if (!d && up) {
			conn = e->parent_conn_id;
			seq = e->parent_seq;
			d = deferred__get(a->def, conn, seq);
		}
		if (d) {
			route = d->route_id;
			rule = d->rule_idx;
			gen = d->gen;
			/*
			 * Forget an entry with its own exchange; a downstream
			 * one outlives its upstream legs (they end first).
			 */
			if (conn == e->conn_id)
				deferred__del(a->def, conn, seq);
		} else {
			route = MM_ROUTE_UNKNOWN;
			a->st.deferred_unknown++;
		}
	}
	if (route == MM_ROUTE_UNKNOWN && e->leg == MM_LEG_UPSTREAM)
		a->st.unknown_upstream++;
	t = a->table(a->table_ctx, gen);
	if (!t && route < MM_ROUTE_UNKNOWN) {
		a->st.retired_gen++;
		route = MM_ROUTE_UNKNOWN;
	}
	if (route >= ROUTE_KEY_SPECIAL && route < MM_ROUTE_UNKNOWN)
		route = MM_ROUTE_UNKNOWN; /* past what a key holds */
	ke = lookup(a,
		    pack_key(route >= MM_ROUTE_UNKNOWN ? e->gw : gen,
			     route >= MM_ROUTE_UNKNOWN
				     ? ROUTE_KEY_MASK - (~route)
				     : route,
			     rule, e->method, e->status, grpc, e->leg, aborted),
		    t, e->gw, route, rule, e->method, e->status, grpc, e->leg,
		    aborted);
	if (!ke)
		return;
	ke->last_ns = now;
	ms = e->end_ns > e->start_ns ? (e->end_ns - e->start_ns) / 1e6 : 0;
	if (ke->total)
		mseries__add(ke->total, 1, now);
	if (ke->time)
		mseries__observe(ke->time, ms, now);
	if (a->pe && ke->pe_gen != policy_engine__generation(a->pe)) {
		struct labels lb;

		build_labels(t, e->gw, route, rule, e->method, e->status, grpc,
			     aborted, &lb);
		bind_entry(a, ke, e->leg, &lb);
	}
	if (ke->b_total)
		pe_binding__record(ke->b_total, 1, now);
	if (ke->b_time)
		pe_binding__record(ke->b_time, ms, now);
}

void aggregate__exchange_head(struct aggregate *a, const struct exchange *e,
			      const char *head, size_t len, bool trunc)
{
	const struct route_table *t = a->table(a->table_ctx, e->route_gen);
	struct exchange x = *e;
	struct route_result res;

	if (x.route_id == MM_ROUTE_DEFER) {
		x.route_id = MM_ROUTE_UNKNOWN;
		if (!t)
			a->st.retired_gen++;
		else if (route_match__lookup_head(t, x.gw, 0, head, len, trunc,
						  &res) >= 0) {
			x.route_id = res.route_id;
			x.rule_idx = res.rule_idx;
		}
		/*
		 * An upstream request the proxy sent was routed: no route by
		 * its own head means its authority was rewritten (gRPC's is the
		 * backend's unless the proxy forwards Host), not "unmatched".
		 */
		if (x.leg == MM_LEG_UPSTREAM &&
		    x.route_id == MM_ROUTE_UNMATCHED)
			x.route_id = MM_ROUTE_UNKNOWN;
	}
	on_exchange(a, &x);
}

int aggregate__event(struct aggregate *a, const void *data, size_t size)
{
	const struct mm_http_event *e = data;

	if (size < sizeof(*e))
		return 0;
	a->st.events++;
	if (e->type == MM_EVT_HEAD)
		on_head(a, e, size);
	else if (e->type == MM_EVT_EXCHANGE) {
		struct exchange x;

		exchange__from_event(&x, e);
		on_exchange(a, &x);
	}
	return 0;
}

void aggregate__maintain(struct aggregate *a, uint64_t now_ns, uint64_t idle_ns)
{
	bool removed = false;

	a->st.deferred_expired +=
		deferred__expire(a->def, now_ns, DEFERRED_MAX_AGE_NS);

	if (!idle_ns)
		return;
	for (size_t i = 0; i < a->cap; i++) {
		struct key_entry *e = &a->tab[i];

		if (e->key && e->last_ns && now_ns - e->last_ns > idle_ns) {
			entry_release(a, e);
			a->used--;
			removed = true;
		}
	}
	/* linear probing cannot leave holes: rehash in place */
	if (removed) {
		size_t cap = a->cap;

		a->cap = cap / 2 >= 1024 && a->used * 4 < cap ? cap / 2 : cap;
		{
			struct key_entry *old = a->tab;
			struct key_entry *n = calloc(a->cap, sizeof(*n));

			if (!n) {
				a->cap = cap;
				return;
			}
			for (size_t i = 0; i < cap; i++) {
				size_t j;

				if (!old[i].key)
					continue;
				for (j = mix(old[i].key) & (a->cap - 1);
				     n[j].key; j = (j + 1) & (a->cap - 1))
					;
				n[j] = old[i];
			}
			free(old);
			a->tab = n;
		}
		a->st.keys = a->used;
	}
}

void aggregate__stats(const struct aggregate *a, struct aggregate_stats *st)
{
	*st = a->st;
}
