// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/aggregate.h"
#include "agent/features.h"
#include "agent/loader.h"
#include "agent/route_sync.h"
#include "agent/self_metrics.h"
#include "agent/h2_feed.h"
#include "agent/proxy_pods.h"
#include "agent/state.h"
#include "agent/tls_capture.h"
#include "agent/targets.h"
#include "exporter/json_out.h"
#include "bpf/milometer.h"
#include "exporter/metric_store.h"
#include "exporter/otlp_sender.h"
#include "exporter/otlp_tenancy.h"
#include "milometer.skel.h"
#include "policy/contract/contract.h"
#include "policy/gateway/route_compile.h"
#include "agent/k8s/authz.h"
#include "agent/k8s/k8s_metrics.h"

static const char *const bpf_stat_names[MM_STAT__COUNT] = {
	[MM_STAT_EVENTS] = "events",
	[MM_STAT_RINGBUF_FULL] = "ringbuf_full",
	[MM_STAT_CONN_MAP_FULL] = "conn_map_full",
	[MM_STAT_HEAD_TRUNC] = "head_truncated",
	[MM_STAT_UNPARSED] = "unparsed",
	[MM_STAT_PIPELINE_FULL] = "pipeline_full",
	[MM_STAT_ABORTED] = "aborted",
	[MM_STAT_SCAN_LIMIT] = "scan_limit",
	[MM_STAT_IOV_LIMIT] = "iov_limit",
	[MM_STAT_DEFERRED] = "deferred",
	[MM_STAT_FORKS] = "forks",
	[MM_STAT_NOT_HTTP] = "not_http",
	[MM_STAT_PIPELINE_LOST] = "pipeline_lost",
	[MM_STAT_NO_BUFFER] = "no_buffer",
	[MM_STAT_LINK_FAIL] = "link_fail",
	[MM_STAT_CONNS_OPENED] = "connections_opened",
	[MM_STAT_CONNS_CLOSED] = "connections_closed",
	[MM_STAT_RESYNCED] = "resynced",
	[MM_STAT_TLS_IO] = "tls_io",
	[MM_STAT_TLS_NO_SOCKET] = "tls_no_socket",
	[MM_STAT_H2_CONNS] = "h2_connections",
	[MM_STAT_H2_LOST] = "h2_lost",
	[MM_STAT_TLS_NO_CONN] = "tls_no_connection",
	[MM_STAT_TLS_STREAMS] = "tls_streams",
	[MM_STAT_ROUTE_STATE_LOST] = "route_state_lost",
};

enum {
	M_BPF,          /* milometer.bpf.<stat>: one metric per stat below */
	M_DROPPED = MM_STAT__COUNT,
	M_MAP_FILL,
	M_SERIES_ACTIVE,
	M_SERIES_OVERFLOW,
	M_SERIES_EXPIRED,
	M_STORE_BYTES,
	M_USER_EVENTS,
	M_DEFERRED_RESOLVED,
	M_DEFERRED_UNKNOWN,
	M_TARGETS,
	M_ROUTE_RELOADS,
	M_ROUTE_ERROR,
	M_CONTRACT_RELOAD_FAILURES,
	M_ROUTE_OBJ_REJECTED,
	M_EXPORT_ATTEMPTS,
	M_EXPORT_FAILURES,
	M_EXPORT_RETRIES,
	M_EXPORT_DROPPED,
	M_EXPORT_QUEUE,
	M_EXPORT_NO_TENANT,
	M_AUTH_REVIEWS,
	M_AUTH_CACHE_HITS,
	M_AUTH_ERRORS,
	M_CPU,
	M_RSS,
	M_BPF_RUN_NS,
	M_BPF_RUN_CNT,
	M_CONTRACT,
	M_CAPTURE_MODE,
	M_CONNS_OPEN,
	M_FEATURE,
	M_MEM_LIMIT,
	M_CAP,
	M_REQUESTS,
	M_H2,
	M_TLS,
	M_PROXY_PODS,
	M__N,
};

struct self_metrics {
	struct agent *ag;
	int id[M__N];
	char names[MM_STAT__COUNT][64];
	char descs[MM_STAT__COUNT][96];
	/* last values, for ctl stats */
	uint64_t bpf[MM_STAT__COUNT];
	double fill[8];
	struct k8s_metrics *k8s; /* milometer_k8s_*, when the API is the source */
};

static const char *const map_names[] = {
	"mm_conns", "mm_targets", "mm_vhosts",
	"mm_routes", "mm_conn_exts", "mm_route_accs",
};
#define NMAPS (sizeof(map_names) / sizeof(map_names[0]))

static int reg(struct self_metrics *sm, int idx, const char *name,
	       const char *desc, const char *unit, enum minstrument ins,
	       bool is_int)
{
	struct mmetric_desc d = {
		.name = name, .description = desc, .unit = unit,
		.instrument = ins, .temporality = MT_CUMULATIVE, .is_int = is_int,
	};

	sm->id[idx] = mstore__add_metric(sm->ag->store, &d);
	return sm->id[idx] < 0 ? sm->id[idx] : 0;
}

struct self_metrics *self_metrics__new(struct agent *ag)
{
	struct self_metrics *sm = calloc(1, sizeof(*sm));
	int err = 0;

	if (!sm)
		return NULL;
	sm->ag = ag;
	for (int i = 0; i < MM_STAT__COUNT; i++) {
		snprintf(sm->names[i], sizeof(sm->names[i]), "milometer.bpf.%s",
			 bpf_stat_names[i]);
		snprintf(sm->descs[i], sizeof(sm->descs[i]),
			 "BPF data path: %s (summed over CPUs).", bpf_stat_names[i]);
		err |= reg(sm, i, sm->names[i], sm->descs[i], "1", MI_COUNTER, true);
	}
	err |= reg(sm, M_DROPPED, "milometer.events.dropped",
		   "Requests or events lost, by reason.", "1", MI_COUNTER, true);
	err |= reg(sm, M_MAP_FILL, "milometer.bpf.map.fill",
		   "Entries in use over capacity, per BPF map.", "1", MI_GAUGE, false);
	err |= reg(sm, M_SERIES_ACTIVE, "milometer.series.active",
		   "Series held in memory.", "{series}", MI_GAUGE, true);
	err |= reg(sm, M_SERIES_OVERFLOW, "milometer.series.overflowed",
		   "Points routed to overflow series past the per-metric cap.",
		   "1", MI_COUNTER, true);
	err |= reg(sm, M_SERIES_EXPIRED, "milometer.series.expired",
		   "Series dropped after being idle.", "1", MI_COUNTER, true);
	err |= reg(sm, M_STORE_BYTES, "milometer.series.memory",
		   "Heap held by series (approximate).", "By", MI_GAUGE, true);
	err |= reg(sm, M_USER_EVENTS, "milometer.events.received",
		   "Ring-buffer events handled in user space.", "1", MI_COUNTER, true);
	err |= reg(sm, M_DEFERRED_RESOLVED, "milometer.attribution.deferred_resolved",
		   "Requests BPF deferred and user space attributed.", "1",
		   MI_COUNTER, true);
	err |= reg(sm, M_DEFERRED_UNKNOWN, "milometer.attribution.unknown",
		   "Requests that could not be attributed (head lost or unparseable).",
		   "1", MI_COUNTER, true);
	err |= reg(sm, M_TARGETS, "milometer.targets",
		   "Proxy processes traced.", "{process}", MI_GAUGE, true);
	err |= reg(sm, M_ROUTE_RELOADS, "milometer.routes.reloads",
		   "Route tables installed.", "1", MI_COUNTER, true);
	err |= reg(sm, M_ROUTE_ERROR, "milometer.routes.rejected",
		   "1 while the latest manifests are rejected (previous table active).",
		   "", MI_GAUGE, true);
	err |= reg(sm, M_CONTRACT_RELOAD_FAILURES,
		   "milometer.contract.reload_failures",
		   "Manifest reloads that failed (previous MetricDefinitions/MetricPolicies kept).",
		   "1", MI_COUNTER, true);
	err |= reg(sm, M_ROUTE_OBJ_REJECTED, "milometer.routes.objects_rejected",
		   "Manifest files or Gateway API objects left out of the route table (invalid, over a limit, duplicate); the agent log says why.",
		   "{object}", MI_GAUGE, true);
	err |= reg(sm, M_EXPORT_ATTEMPTS, "milometer.export.attempts",
		   "OTLP export HTTP requests.", "1", MI_COUNTER, true);
	err |= reg(sm, M_EXPORT_FAILURES, "milometer.export.failures",
		   "OTLP export requests that failed.", "1", MI_COUNTER, true);
	err |= reg(sm, M_EXPORT_RETRIES, "milometer.export.retries",
		   "OTLP export retries.", "1", MI_COUNTER, true);
	err |= reg(sm, M_EXPORT_DROPPED, "milometer.export.dropped",
		   "OTLP batches dropped (queue full or rejected).", "1",
		   MI_COUNTER, true);
	err |= reg(sm, M_EXPORT_QUEUE, "milometer.export.queue",
		   "Bytes waiting in the OTLP export queue.", "By", MI_GAUGE, true);
	err |= reg(sm, M_EXPORT_NO_TENANT, "milometer.export.no_tenant",
		   "OTLP points dropped by --otlp-tenant-from: bound to no "
		   "tenant and no --otlp-tenant-default.", "1", MI_COUNTER, true);
	err |= reg(sm, M_AUTH_REVIEWS, "milometer.metrics_auth.reviews",
		   "TokenReviews and SubjectAccessReviews sent to authorize "
		   "/metrics readers (--metrics-auth kubernetes).", "1",
		   MI_COUNTER, true);
	err |= reg(sm, M_AUTH_CACHE_HITS, "milometer.metrics_auth.cache_hits",
		   "/metrics authorization decisions reused from the cache.",
		   "1", MI_COUNTER, true);
	err |= reg(sm, M_AUTH_ERRORS, "milometer.metrics_auth.errors",
		   "Reviews the Kubernetes API did not answer (the scrape was a "
		   "503).", "1", MI_COUNTER, true);
	err |= reg(sm, M_CPU, "milometer.process.cpu.time",
		   "CPU time of the agent process (user + system).", "s",
		   MI_COUNTER, false);
	err |= reg(sm, M_RSS, "milometer.process.memory.usage",
		   "Resident memory of the agent process.", "By", MI_GAUGE, true);
	err |= reg(sm, M_BPF_RUN_NS, "milometer.bpf.run.time",
		   "Time spent in each BPF program (needs kernel.bpf_stats_enabled=1).",
		   "s", MI_COUNTER, false);
	err |= reg(sm, M_BPF_RUN_CNT, "milometer.bpf.run.count",
		   "Runs of each BPF program (needs kernel.bpf_stats_enabled=1).",
		   "1", MI_COUNTER, true);
	err |= reg(sm, M_CAPTURE_MODE, "milometer.capture.mode",
		   "1 for the capture mode in use (sock: socket tracepoints; sys-exit: fallback).",
		   "", MI_GAUGE, true);
	err |= reg(sm, M_CONNS_OPEN, "milometer.bpf.connections",
		   "Connections the data path holds state for now.",
		   "{connection}", MI_GAUGE, true);
	err |= reg(sm, M_CONTRACT, "milometer.contract.objects",
		   "MetricDefinitions and MetricPolicies by condition.",
		   "{object}", MI_GAUGE, true);
	if (!err && ag->k8s && !(sm->k8s = k8s_metrics__new(ag->store)))
		err = -ENOMEM;
	/* as kubernetes_feature_enabled: 1 on, 0 off, one series per gate */
	err |= reg(sm, M_FEATURE, "milometer.feature.enabled",
		   "Feature gate state (1 enabled), by name and stage.", "",
		   MI_GAUGE, true);
	/* the per-node sizing figures: the limit, the caps it gave, and the
	 * drivers of CPU and memory (connections: milometer.bpf.connections;
	 * requests, series, queue) */
	err |= reg(sm, M_MEM_LIMIT, "milometer.process.memory.limit",
		   "The agent's cgroup memory limit (0: none); the caps follow it.",
		   "By", MI_GAUGE, true);
	err |= reg(sm, M_CAP, "milometer.cap",
		   "Hard caps in effect, by cap (after fitting the memory limit).",
		   "{value}", MI_GAUGE, true);
	err |= reg(sm, M_REQUESTS, "milometer.http.exchanges",
		   "HTTP exchanges (request and response) parsed, downstream and "
		   "upstream legs: the CPU driver; its rate is requests/s.",
		   "{exchange}", MI_COUNTER, true);
	err |= reg(sm, M_H2, "milometer.http2.streams",
		   "HTTP/2 streams by what became of them (exchange, unknown: "
		   "route fields from before the agent attached; lost: open when "
		   "the connection's bytes were lost, not counted).",
		   "{stream}", MI_COUNTER, true);
	err |= reg(sm, M_TLS, "milometer.tls.uprobes",
		   "TLS capture's uprobes attached now (0 with the gate off), by kind "
		   "(uprobes; processes hooked now; libraries hooked since the gate "
		   "turned on).", "{item}", MI_GAUGE,
		   true);
	err |= reg(sm, M_PROXY_PODS, "milometer.proxy_pods",
		   "Proxy pods of this node found from the API, by state (pods; "
		   "containers traced; containers waiting for their cgroup or "
		   "Gateway table; container cgroups taken out since start, their "
		   "pod or container gone; Gateways with a route table slot).",
		   "{item}", MI_GAUGE, true);
	if (err) {
		free(sm);
		return NULL;
	}
	return sm;
}

void self_metrics__free(struct self_metrics *sm)
{
	if (sm)
		k8s_metrics__free(sm->k8s);
	free(sm);
}

static void set1(struct self_metrics *sm, int idx, double v, uint64_t now,
		 const struct mlabel *l, size_t n)
{
	struct mseries *s = mstore__series(sm->ag->store, sm->id[idx], l, n);

	if (s)
		mseries__set(s, v, now);
}

static uint64_t map_count(int fd, size_t key_size)
{
	char key[64], next[64];
	void *prev = NULL;
	uint64_t n = 0;

	if (key_size > sizeof(key))
		return 0;
	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

struct contract_ctx {
	struct self_metrics *sm;
	uint64_t now;
};

static void contract_count(void *ctx, const char *kind, const char *type,
			   const char *status, const char *reason, uint64_t n)
{
	struct contract_ctx *cc = ctx;
	struct mlabel l[] = {
		{ "kind", kind }, { "type", type }, { "status", status },
		{ "reason", reason ? reason : "" },
	};

	set1(cc->sm, M_CONTRACT, n, cc->now, l, 4);
}

static void read_bpf_stats(struct self_metrics *sm)
{
	int fd = bpf_map__fd(sm->ag->skel->maps.mm_stats);
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[ncpu > 0 ? ncpu : 1];

	for (__u32 k = 0; k < MM_STAT__COUNT; k++) {
		uint64_t sum = 0;

		if (ncpu <= 0 || bpf_map_lookup_elem(fd, &k, vals))
			continue;
		for (int c = 0; c < ncpu; c++)
			sum += vals[c];
		sm->bpf[k] = sum;
	}
}

void self_metrics__refresh(struct self_metrics *sm)
{
	struct agent *ag = sm->ag;
	struct milometer_bpf *skel = ag->skel;
	uint64_t now = state__real_ns();
	struct aggregate_stats as = {};
	struct mstore_stats ms;
	struct rusage ru;
	struct bpf_program *prog;
	double fills[NMAPS];
	long rss_pages = 0;
	int targets = 0;
	FILE *f;

	read_bpf_stats(sm);
	for (size_t i = 0; i < NMAPS; i++) {
		struct bpf_map *m = bpf_object__find_map_by_name(skel->obj,
								 map_names[i]);

		fills[i] = m ? (double)map_count(bpf_map__fd(m),
						 bpf_map__key_size(m)) /
				       bpf_map__max_entries(m) :
			       0;
		sm->fill[i] = fills[i];
	}
	targets = targets__count(skel);
	if (ag->agg)
		aggregate__stats(ag->agg, &as);
	getrusage(RUSAGE_SELF, &ru);
	f = fopen("/proc/self/statm", "r");
	if (f) {
		long size;

		if (fscanf(f, "%ld %ld", &size, &rss_pages) != 2)
			rss_pages = 0;
		fclose(f);
	}

	mstore__lock(ag->store);
	for (int i = 0; i < MM_STAT__COUNT; i++)
		set1(sm, i, sm->bpf[i], now, NULL, 0);
	{
		static const struct { int stat; const char *reason; } drops[] = {
			{ MM_STAT_RINGBUF_FULL, "ringbuf_full" },
			{ MM_STAT_CONN_MAP_FULL, "conn_map_full" },
			{ MM_STAT_PIPELINE_FULL, "pipeline_full" },
			{ MM_STAT_SCAN_LIMIT, "scan_limit" },
			{ MM_STAT_IOV_LIMIT, "iov_limit" },
			{ MM_STAT_UNPARSED, "unparsed" },
			{ MM_STAT_PIPELINE_LOST, "pipeline_lost" },
			{ MM_STAT_NO_BUFFER, "no_buffer" },
		};

		for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++) {
			struct mlabel l = { "reason", drops[i].reason };

			set1(sm, M_DROPPED, sm->bpf[drops[i].stat], now, &l, 1);
		}
	}
	for (size_t i = 0; i < NMAPS; i++) {
		struct mlabel l = { "map", map_names[i] };

		set1(sm, M_MAP_FILL, fills[i], now, &l, 1);
	}
	mstore__unlock(ag->store);

	mstore__stats(ag->store, &ms);
	mstore__lock(ag->store);
	set1(sm, M_SERIES_ACTIVE, ms.series_active, now, NULL, 0);
	set1(sm, M_SERIES_OVERFLOW, ms.series_overflowed, now, NULL, 0);
	set1(sm, M_SERIES_EXPIRED, ms.series_expired, now, NULL, 0);
	set1(sm, M_STORE_BYTES, ms.bytes, now, NULL, 0);
	set1(sm, M_USER_EVENTS, as.events, now, NULL, 0);
	set1(sm, M_DEFERRED_RESOLVED, as.deferred_resolved, now, NULL, 0);
	set1(sm, M_DEFERRED_UNKNOWN, as.deferred_unknown, now, NULL, 0);
	set1(sm, M_TARGETS, targets, now, NULL, 0);
	{
		struct mlabel l = { "mode", loader__capture_mode() };

		set1(sm, M_CAPTURE_MODE, 1, now, &l, 1);
	}
	set1(sm, M_CONNS_OPEN,
	     sm->bpf[MM_STAT_CONNS_OPENED] > sm->bpf[MM_STAT_CONNS_CLOSED] ?
		     sm->bpf[MM_STAT_CONNS_OPENED] - sm->bpf[MM_STAT_CONNS_CLOSED] : 0,
	     now, NULL, 0);
	set1(sm, M_ROUTE_RELOADS, route_sync__reloads(ag->routes), now, NULL, 0);
	set1(sm, M_ROUTE_ERROR, route_sync__last_error(ag->routes) ? 1 : 0, now,
	     NULL, 0);
	set1(sm, M_CONTRACT_RELOAD_FAILURES, ag->contract_reload_failures, now,
	     NULL, 0);
	set1(sm, M_ROUTE_OBJ_REJECTED,
	     route_sync__rejected_objects(ag->routes), now, NULL, 0);
	set1(sm, M_CPU,
	     ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
		     ru.ru_stime.tv_usec / 1e6,
	     now, NULL, 0);
	set1(sm, M_RSS, (double)rss_pages * sysconf(_SC_PAGESIZE), now, NULL, 0);
	set1(sm, M_MEM_LIMIT, ag->mem_limit.bytes, now, NULL, 0);
	set1(sm, M_REQUESTS, as.exchanges, now, NULL, 0);
	{
		struct h2_feed_stats hs;
		struct tls_capture_stats ts;
		struct mlabel l = { .key = "result" };
		struct mlabel k = { .key = "kind" };

		h2_feed__stats(ag->h2, &hs);
		l.value = "exchange";
		set1(sm, M_H2, hs.exchanges - hs.unknown, now, &l, 1);
		l.value = "unknown";
		set1(sm, M_H2, hs.unknown, now, &l, 1);
		l.value = "lost";
		set1(sm, M_H2, hs.lost_streams, now, &l, 1);
		tls_capture__stats(ag->tls, &ts);
		k.value = "uprobes";
		set1(sm, M_TLS, ts.uprobes, now, &k, 1);
		k.value = "processes";
		set1(sm, M_TLS, ts.processes, now, &k, 1);
		k.value = "libraries";
		set1(sm, M_TLS, ts.libraries, now, &k, 1);
	}
	if (ag->k8s) {
		const struct proxy_pods_stats *pp = &ag->proxy_pods;
		const struct route_table *t = route_sync__current(ag->routes);
		const struct { const char *state; uint64_t v; } rows[] = {
			{ "pods", pp->pods },
			{ "containers_traced", pp->containers },
			{ "containers_waiting", pp->missing },
			{ "containers_removed", pp->removed },
			{ "gateway_slots", t && t->nslots ? t->nslots - 1 : 0 },
		};
		struct mlabel l = { .key = "state" };

		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			l.value = rows[i].state;
			set1(sm, M_PROXY_PODS, rows[i].v, now, &l, 1);
		}
	}
	{
		const struct agent_opts *o = ag->opts;
		const struct { const char *name; double v; } caps[] = {
			{ "max_connections", o->max_connections },
			{ "ringbuf_bytes", o->ringbuf_bytes },
			{ "max_series_per_metric", o->max_series },
			{ "otlp_queue_bytes", o->otlp_queue_bytes },
		};

		for (size_t i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
			struct mlabel l = { "cap", caps[i].name };

			set1(sm, M_CAP, caps[i].v, now, &l, 1);
		}
	}
	if (ag->authz) {
		struct k8s_authz_stats as;
		struct mlabel tr = { "review", "token" };
		struct mlabel sar = { "review", "access" };

		k8s_authz__stats(ag->authz, &as);
		set1(sm, M_AUTH_REVIEWS, as.token_reviews, now, &tr, 1);
		set1(sm, M_AUTH_REVIEWS, as.access_reviews, now, &sar, 1);
		set1(sm, M_AUTH_CACHE_HITS, as.cache_hits, now, NULL, 0);
		set1(sm, M_AUTH_ERRORS, as.errors, now, NULL, 0);
	}
	if (ag->otlp) {
		struct otlp_sender_stats os;

		otlp_sender__stats(ag->otlp, &os);
		set1(sm, M_EXPORT_ATTEMPTS, os.attempts, now, NULL, 0);
		set1(sm, M_EXPORT_FAILURES, os.failures, now, NULL, 0);
		set1(sm, M_EXPORT_RETRIES, os.retries, now, NULL, 0);
		set1(sm, M_EXPORT_DROPPED, os.dropped_batches, now, NULL, 0);
		set1(sm, M_EXPORT_QUEUE, os.queue_bytes, now, NULL, 0);
		if (ag->tenancy) {
			struct otlp_tenancy_stats ts;

			otlp_tenancy__stats(ag->tenancy, &ts);
			set1(sm, M_EXPORT_NO_TENANT, ts.dropped_points, now,
			     NULL, 0);
		}
	} else {
		/* a sizing driver: present (and 0) without OTLP too */
		set1(sm, M_EXPORT_QUEUE, 0, now, NULL, 0);
	}
	bpf_object__for_each_program(prog, skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		struct mlabel l = { "program", bpf_program__name(prog) };

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		if (!info.run_cnt)
			continue;
		set1(sm, M_BPF_RUN_NS, info.run_time_ns / 1e9, now, &l, 1);
		set1(sm, M_BPF_RUN_CNT, info.run_cnt, now, &l, 1);
	}
	if (sm->k8s)
		k8s_metrics__refresh(sm->k8s, ag->k8s, now);
	mstore__unlock(ag->store);

	if (ag->features) {
		mstore__lock(ag->store);
		for (size_t i = 0; i < features__count(ag->features); i++) {
			const struct feature_spec *fs = features__spec(ag->features, i);
			struct mlabel l[] = {
				{ "name", fs->name },
				{ "stage", features__stage_name(fs->stage) },
			};

			set1(sm, M_FEATURE, features__enabled(ag->features, i),
			     now, l, 2);
		}
		mstore__unlock(ag->store);
	}
	if (ag->contract) {
		struct contract_ctx cc = { .sm = sm, .now = now };

		mstore__lock(ag->store);
		contract__condition_counts(ag->contract, contract_count, &cc);
		mstore__unlock(ag->store);
	}
}

void self_metrics__dump(struct self_metrics *sm, FILE *out, int json)
{
	struct aggregate_stats as = {};

	read_bpf_stats(sm);
	if (sm->ag->agg)
		aggregate__stats(sm->ag->agg, &as);
	if (json) {
		fputs("{\"bpf\":{", out);
		for (int i = 0; i < MM_STAT__COUNT; i++) {
			fputs(i ? "," : "", out);
			json_out__key(out, bpf_stat_names[i]);
			fprintf(out, "%llu", (unsigned long long)sm->bpf[i]);
		}
		fputs("},\"maps\":{", out);
		for (size_t i = 0; i < NMAPS; i++) {
			fputs(i ? "," : "", out);
			json_out__key(out, map_names[i]);
			json_out__double(out, sm->fill[i]);
		}
		fprintf(out,
			"},\"user\":{\"events\":%llu,\"exchanges\":%llu,\"heads\":%llu,"
			"\"deferred_resolved\":%llu,\"unknown\":%llu,\"aborted\":%llu,"
			"\"keys\":%llu}}\n",
			(unsigned long long)as.events, (unsigned long long)as.exchanges,
			(unsigned long long)as.heads,
			(unsigned long long)as.deferred_resolved,
			(unsigned long long)as.deferred_unknown,
			(unsigned long long)as.aborted, (unsigned long long)as.keys);
		return;
	}
	fputs("bpf:\n", out);
	for (int i = 0; i < MM_STAT__COUNT; i++)
		fprintf(out, "  %-18s %llu\n", bpf_stat_names[i],
			(unsigned long long)sm->bpf[i]);
	fputs("map fill (last refresh):\n", out);
	for (size_t i = 0; i < NMAPS; i++)
		fprintf(out, "  %-16s %.2f%%\n", map_names[i], sm->fill[i] * 100);
	fprintf(out,
		"user space:\n  events %llu, exchanges %llu, deferred heads %llu "
		"(resolved %llu, unknown %llu), aborted %llu, series keys %llu\n",
		(unsigned long long)as.events, (unsigned long long)as.exchanges,
		(unsigned long long)as.heads,
		(unsigned long long)as.deferred_resolved,
		(unsigned long long)as.deferred_unknown,
		(unsigned long long)as.aborted, (unsigned long long)as.keys);
}
