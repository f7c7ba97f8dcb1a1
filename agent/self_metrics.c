// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/pipeline/aggregate.h"
#include "agent/config/features.h"
#include "agent/loader.h"
#include "agent/route_sync.h"
#include "agent/self_metrics.h"
#include "agent/pipeline/h2_feed.h"
#include "agent/proxy_pods.h"
#include "agent/ring_reader.h"
#include "agent/state.h"
#include "agent/tls_capture.h"
#include "agent/targets.h"
#include "policy/util/json_out.h"
#include "exporter/metric_doc.h"
#include "bpf/milometer.h"
#include "policy/model/metric_store.h"
#include "exporter/otlp_sender.h"
#include "exporter/otlp_tenancy.h"
#include "milometer.skel.h"
#include "policy/contract/contract.h"
#include "agent/metrics/contract_metrics.h"
#include "policy/gateway/route_compile.h"
#include "agent/authz/authz.h"
#include "agent/metrics/k8s_metrics.h"

/* The BPF data path's counters (mm_stats), each exposed as milometer.bpf.<name>. */
/* one counter a row: clang-format would wrap the rows */
// clang-format off
static const struct {
	const char *name;
	const char *meaning;
} bpf_stats[MM_STAT__COUNT] = {
	[MM_STAT_EVENTS] = { "events", "Events written to the ring buffer." },
	[MM_STAT_RINGBUF_FULL] = { "ringbuf_full", "Events lost: the ring buffer was full (raise --ringbuf-bytes)." },
	[MM_STAT_CONN_MAP_FULL] = { "conn_map_full", "Connections not tracked: the connection map was full (raise --max-connections)." },
	[MM_STAT_HEAD_TRUNC] = { "head_truncated", "Request heads longer than the head buffer (MM_HEAD_MAX); routes that need the cut fields are unknown." },
	[MM_STAT_UNPARSED] = { "unparsed", "Connections that stopped looking like HTTP." },
	[MM_STAT_PIPELINE_FULL] = { "pipeline_full", "Pipelined requests past MM_PIPELINE_DEPTH in flight on one connection." },
	[MM_STAT_ABORTED] = { "aborted", "Exchanges ended by a close before the response ended." },
	[MM_STAT_SCAN_LIMIT] = { "scan_limit", "Bytes of a syscall past what one hook scans." },
	[MM_STAT_IOV_LIMIT] = { "iov_limit", "iovecs past what one hook walks." },
	[MM_STAT_DEFERRED] = { "deferred", "Attributions left to user space (head spanning reads, HTTP/2)." },
	[MM_STAT_FORKS] = { "forks", "Processes added because a traced process forked." },
	[MM_STAT_NOT_HTTP] = { "not_http", "Sockets found mid-stream that are not HTTP." },
	[MM_STAT_PIPELINE_LOST] = { "pipeline_lost", "Requests past MM_PIPELINE_DEPTH + 255 on one connection: not reported." },
	[MM_STAT_NO_BUFFER] = { "no_buffer", "I/O whose bytes could not be read (io_uring, splice, a bad iovec or msghdr)." },
	[MM_STAT_LINK_FAIL] = { "link_fail", "Thread links not stored (task storage full)." },
	[MM_STAT_CONNS_OPENED] = { "connections_opened", "Connections given state." },
	[MM_STAT_CONNS_CLOSED] = { "connections_closed", "Tracked connections closed." },
	[MM_STAT_RESYNCED] = { "resynced", "Streams first seen mid-message, picked up at the next turn." },
	[MM_STAT_TLS_IO] = { "tls_io", "SSL_read/SSL_write plaintext I/Os parsed (TLSCapture)." },
	[MM_STAT_TLS_NO_SOCKET] = { "tls_no_socket", "SSL_* I/Os whose socket no syscall named (memory BIO): not parsed." },
	[MM_STAT_H2_CONNS] = { "h2_connections", "Connections found to speak HTTP/2 (gate HTTP2)." },
	[MM_STAT_H2_LOST] = { "h2_lost", "HTTP/2 feeds stopped: bytes could not be read or sent up." },
	[MM_STAT_TLS_NO_CONN] = { "tls_no_connection", "SSL_* I/Os returned after their socket was gone or untracked: dropped." },
	[MM_STAT_TLS_STREAMS] = { "tls_streams", "Streams of TLS records (HTTPS listener or backend): not parsed; TLSCapture reads them." },
	[MM_STAT_ROUTE_STATE_LOST] = { "route_state_lost", "Request heads spanning reads with no mm_route_accs entry to be had: finished in user space." },
	[MM_STAT_TARGETS_FULL] = { "targets_full", "Processes traced on the default route table: mm_targets was full at their fork or exec." },
	[MM_STAT_RESP_FIRST] = { "response_first", "Upstream responses read before the send tracepoint of the request they answer had run (a proxy that writes on one thread and reads on another, its writer preempted between the send and the tracepoint): held, and paired with that request when its tracepoint ran." },
	[MM_STAT_RESP_IN_PARSE] = { "response_in_parse", "Upstream responses read while the send tracepoint of the request they answer was still parsing its head on another CPU: handed to that parse, and paired with that request as the parse ended (method and route known once its head was done)." },
	[MM_STAT_TLS_CALL_LOST] = { "tls_call_lost", "TLS calls not followed: no task storage to be had for an SSL_* call, or a Go crypto/tls call that moved bytes and whose entry was not kept (more goroutines in Read or Write than mm_tls_gocalls holds)." },
};
// clang-format on

static const char *const map_names[] = {
	"mm_conns",  "mm_targets",   "mm_vhosts",
	"mm_routes", "mm_conn_exts", "mm_route_accs",
};
#define NMAPS (sizeof(map_names) / sizeof(map_names[0]))

/* What one refresh reads outside the store lock (syscalls, BPF maps). */
struct sm_read {
	struct self_metrics *sm;
	struct agent *ag;
	uint64_t now;
	struct aggregate_stats as;
	struct mstore_stats ms;
	struct rusage ru;
	long rss_pages;
	int targets;
	double fills[NMAPS];
};

/*
 * A self-metric, declared once: what the store and the reference are given
 * (doc) and how a refresh reads it (read sets its series; the store lock
 * is held). The table's order is the registration order, which is the
 * order of the families in /metrics.
 */
struct self_metric {
	struct metric_doc doc;
	void (*read)(struct sm_read *r, int id);
	bool k8s_before; /* the milometer_k8s_* families come just before this one */
};

struct self_metrics {
	struct agent *ag;
	int bpf_id[MM_STAT__COUNT];
	int *id; /* per self_metric_table entry */
	/* last values, for ctl stats */
	uint64_t bpf[MM_STAT__COUNT];
	double fill[8];
	struct k8s_metrics *k8s; /* milometer_k8s_*, when the API is the source */
};

static void set1(struct sm_read *r, int id, double v, const struct mlabel *l,
		 size_t n)
{
	struct mseries *s = mstore__series(r->ag->store, id, l, n);

	if (s)
		mseries__set(s, v, r->now);
}

static void set0(struct sm_read *r, int id, double v)
{
	set1(r, id, v, NULL, 0);
}

/* One series per row, labelled key=name. */
struct sm_row {
	const char *name;
	double v;
};

static void set_rows(struct sm_read *r, int id, const char *key,
		     const struct sm_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct mlabel l = { key, rows[i].name };

		set1(r, id, rows[i].v, &l, 1);
	}
}

#define ROWS(r, id, key, ...)                                                  \
	do {                                                                   \
		const struct sm_row rows_[] = { __VA_ARGS__ };                 \
		set_rows(r, id, key, rows_, sizeof(rows_) / sizeof(rows_[0])); \
	} while (0)

static void read_dropped(struct sm_read *r, int id)
{
	const uint64_t *b = r->sm->bpf;
	struct event_queue_stats qs = {};

	if (r->ag->reader)
		ring_reader__stats(r->ag->reader, &qs);

	ROWS(r, id, "reason", { "ringbuf_full", b[MM_STAT_RINGBUF_FULL] },
	     { "conn_map_full", b[MM_STAT_CONN_MAP_FULL] },
	     { "pipeline_full", b[MM_STAT_PIPELINE_FULL] },
	     { "scan_limit", b[MM_STAT_SCAN_LIMIT] },
	     { "iov_limit", b[MM_STAT_IOV_LIMIT] },
	     { "unparsed", b[MM_STAT_UNPARSED] },
	     { "pipeline_lost", b[MM_STAT_PIPELINE_LOST] },
	     { "no_buffer", b[MM_STAT_NO_BUFFER] },
	     { "queue_full", qs.dropped });
}

static void read_map_fill(struct sm_read *r, int id)
{
	for (size_t i = 0; i < NMAPS; i++) {
		struct mlabel l = { "map", map_names[i] };

		set1(r, id, r->fills[i], &l, 1);
	}
}

/* The store's figures as they stand after the BPF series above were set. */
static void read_series_active(struct sm_read *r, int id)
{
	mstore__stats(r->ag->store, &r->ms);
	set0(r, id, r->ms.series_active);
}

static void read_series_overflow(struct sm_read *r, int id)
{
	set0(r, id, r->ms.series_overflowed);
}
static void read_series_expired(struct sm_read *r, int id)
{
	set0(r, id, r->ms.series_expired);
}
static void read_store_bytes(struct sm_read *r, int id)
{
	set0(r, id, r->ms.bytes);
}
static void read_user_events(struct sm_read *r, int id)
{
	set0(r, id, r->as.events);
}
static void read_event_queue(struct sm_read *r, int id, bool peak)
{
	struct event_queue_stats qs = {};

	if (r->ag->reader)
		ring_reader__stats(r->ag->reader, &qs);
	set0(r, id, peak ? qs.peak_bytes : qs.queued_bytes);
}
static void read_event_queue_now(struct sm_read *r, int id)
{
	read_event_queue(r, id, false);
}
static void read_event_queue_peak(struct sm_read *r, int id)
{
	read_event_queue(r, id, true);
}
static void read_deferred_resolved(struct sm_read *r, int id)
{
	set0(r, id, r->as.deferred_resolved);
}
static void read_deferred_unknown(struct sm_read *r, int id)
{
	set0(r, id, r->as.deferred_unknown);
}
static void read_targets(struct sm_read *r, int id)
{
	set0(r, id, r->targets);
}
static void read_route_reloads(struct sm_read *r, int id)
{
	set0(r, id, route_sync__reloads(r->ag->routes));
}
static void read_route_error(struct sm_read *r, int id)
{
	set0(r, id, route_sync__last_error(r->ag->routes) ? 1 : 0);
}
static void read_contract_reload_failures(struct sm_read *r, int id)
{
	set0(r, id, r->ag->contract_reload_failures);
}
static void read_route_obj_rejected(struct sm_read *r, int id)
{
	set0(r, id, route_sync__rejected_objects(r->ag->routes));
}
static void read_route_rules_dropped(struct sm_read *r, int id)
{
	set0(r, id, route_sync__dropped_rules(r->ag->routes));
}
static void read_mem_limit(struct sm_read *r, int id)
{
	set0(r, id, r->ag->mem_limit.bytes);
}
static void read_requests(struct sm_read *r, int id)
{
	set0(r, id, r->as.exchanges);
}

static void read_rss(struct sm_read *r, int id)
{
	set0(r, id, (double)r->rss_pages * sysconf(_SC_PAGESIZE));
}

static void read_cpu(struct sm_read *r, int id)
{
	const struct rusage *ru = &r->ru;

	set0(r, id,
	     ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
		     ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6);
}

/* The export counters exist with OTLP only; the queue is a sizing driver, present (and 0) without. */
#define READ_OTLP(fn, field, always)                                           \
	static void fn(struct sm_read *r, int id)                              \
	{                                                                      \
		struct otlp_sender_stats os = {};                              \
                                                                               \
		if (r->ag->otlp)                                               \
			otlp_sender__stats(r->ag->otlp, &os);                  \
		if (r->ag->otlp || (always))                                   \
			set0(r, id, os.field);                                 \
	}
READ_OTLP(read_export_attempts, attempts, false)
READ_OTLP(read_export_failures, failures, false)
READ_OTLP(read_export_retries, retries, false)
READ_OTLP(read_export_dropped, dropped_batches, false)
READ_OTLP(read_export_queue, queue_bytes, true)

static void read_no_tenant(struct sm_read *r, int id)
{
	struct otlp_tenancy_stats ts;

	if (!r->ag->tenancy)
		return;
	otlp_tenancy__stats(r->ag->tenancy, &ts);
	set0(r, id, ts.dropped_points);
}

/* --metrics-auth kubernetes: what authorizing /metrics readers costs */
static void read_auth(struct sm_read *r, int id, int what)
{
	struct mlabel tr = { "review", "token" }, sar = { "review", "access" };
	struct k8s_authz_stats as;

	if (!r->ag->authz)
		return;
	k8s_authz__stats(r->ag->authz, &as);
	if (what == 0) {
		set1(r, id, as.token_reviews, &tr, 1);
		set1(r, id, as.access_reviews, &sar, 1);
	} else {
		set0(r, id, what == 1 ? as.cache_hits : as.errors);
	}
}
static void read_auth_reviews(struct sm_read *r, int id)
{
	read_auth(r, id, 0);
}
static void read_auth_cache_hits(struct sm_read *r, int id)
{
	read_auth(r, id, 1);
}
static void read_auth_errors(struct sm_read *r, int id)
{
	read_auth(r, id, 2);
}

enum bpf_run_figure { RUN_TIME, RUN_COUNT, RUN_MISSED };

/*
 * Per program, as bpf_prog_info counts them: runs and their time (with
 * kernel.bpf_stats_enabled), runs the kernel skipped (always counted).
 */
static void read_bpf_run(struct sm_read *r, int id, enum bpf_run_figure what)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, r->ag->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		struct mlabel l = { "program", bpf_program__name(prog) };
		__u64 n;

		if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len))
			continue;
		n = what == RUN_MISSED ? info.recursion_misses : info.run_cnt;
		if (!n)
			continue;
		set1(r, id,
		     what == RUN_TIME ? info.run_time_ns / 1e9 : (double)n, &l,
		     1);
	}
}

static void read_bpf_run_ns(struct sm_read *r, int id)
{
	read_bpf_run(r, id, RUN_TIME);
}
static void read_bpf_run_cnt(struct sm_read *r, int id)
{
	read_bpf_run(r, id, RUN_COUNT);
}
static void read_bpf_run_missed(struct sm_read *r, int id)
{
	read_bpf_run(r, id, RUN_MISSED);
}

static void read_capture_mode(struct sm_read *r, int id)
{
	struct mlabel l = { "mode", loader__capture_mode() };

	set1(r, id, 1, &l, 1);
}

static void read_capture_loops(struct sm_read *r, int id)
{
	struct mlabel l = { "loops", loader__loops() };

	set1(r, id, 1, &l, 1);
}

static void read_parse_steps(struct sm_read *r, int id)
{
	set1(r, id, loader__parse_steps(), NULL, 0);
}

static void read_conns_open(struct sm_read *r, int id)
{
	const uint64_t *b = r->sm->bpf;

	set0(r, id,
	     b[MM_STAT_CONNS_OPENED] > b[MM_STAT_CONNS_CLOSED]
		     ? b[MM_STAT_CONNS_OPENED] - b[MM_STAT_CONNS_CLOSED]
		     : 0);
}

static void read_contract(struct sm_read *r, int id)
{
	contract_metrics__set(r->ag->contract, r->ag->store, id, r->now);
}

static void read_feature(struct sm_read *r, int id)
{
	struct features *f = r->ag->features;

	for (size_t i = 0; f && i < features__count(f); i++) {
		const struct feature_spec *fs = features__spec(f, i);
		struct mlabel l[] = {
			{ "name", fs->name },
			{ "stage", features__stage_name(fs->stage) },
		};

		set1(r, id, features__enabled(f, i), l, 2);
	}
}

static void read_cap(struct sm_read *r, int id)
{
	const struct agent_opts *o = r->ag->opts;

	ROWS(r, id, "cap", { "max_connections", o->max_connections },
	     { "ringbuf_bytes", o->ringbuf_bytes },
	     { "event_queue_bytes",
	       (double)o->ringbuf_bytes * OPT_EVENT_QUEUE_PER_RING },
	     { "max_series_per_metric", o->max_series },
	     { "otlp_queue_bytes", o->otlp_queue_bytes });
}

static void read_h2(struct sm_read *r, int id)
{
	struct h2_feed_stats hs;

	h2_feed__stats(r->ag->h2, &hs);
	ROWS(r, id, "result", { "exchange", hs.exchanges - hs.unknown },
	     { "unknown", hs.unknown }, { "lost", hs.lost_streams });
}

static void read_tls(struct sm_read *r, int id)
{
	struct tls_capture_stats ts;

	tls_capture__stats(r->ag->tls, &ts);
	ROWS(r, id, "kind", { "uprobes", ts.uprobes },
	     { "processes", ts.processes }, { "libraries", ts.libraries });
}

static void read_proxy_pods(struct sm_read *r, int id)
{
	const struct proxy_pods_stats *pp = &r->ag->proxy_pods;
	const struct route_table *t;

	if (!r->ag->k8s)
		return;
	t = route_sync__current(r->ag->routes);
	ROWS(r, id, "state", { "pods", pp->pods },
	     { "containers_traced", pp->containers },
	     { "containers_waiting", pp->missing },
	     { "containers_removed", pp->removed },
	     { "gateway_slots", t && t->nslots ? t->nslots - 1 : 0 });
}

#define WITH_OTLP      "with --otlp-endpoint"
#define WITH_API       "with the Kubernetes API as the source of routes"
#define WITH_BPF_STATS "for programs that ran while kernel.bpf_stats_enabled=1"

/* one metric a row: clang-format would wrap the rows */
// clang-format off
static const struct self_metric self_metric_table[] = {
	{ { "milometer.events.dropped", "Requests or events lost, by reason.", "1", MI_COUNTER, true, "reason",
	    .note = "Each reason but `queue_full` counts as the `milometer_bpf_<reason>_total` counter does; `queue_full` counts records read from the ring buffer that found the agent's queue full (4 x --ringbuf-bytes) while its event loop was busy." }, read_dropped },
	{ { "milometer.bpf.map.fill", "Entries in use over capacity, per BPF map.", "1", MI_GAUGE, false, "map" }, read_map_fill },
	{ { "milometer.series.active", "Series held in memory.", "{series}", MI_GAUGE, true }, read_series_active },
	{ { "milometer.series.overflowed", "Points routed to overflow series past the per-metric cap.", "1", MI_COUNTER, true }, read_series_overflow },
	{ { "milometer.series.expired", "Series dropped after being idle.", "1", MI_COUNTER, true }, read_series_expired },
	{ { "milometer.series.memory", "Heap held by series (approximate).", "By", MI_GAUGE, true }, read_store_bytes },
	{ { "milometer.events.received", "Ring-buffer events handled in user space.", "1", MI_COUNTER, true }, read_user_events },
	{ { "milometer.events.queue", "Bytes of ring-buffer records copied out and waiting for the agent's event loop.", "By", MI_GAUGE, true }, read_event_queue_now },
	{ { "milometer.events.queue.peak", "The most bytes of records that ever waited for the event loop (its bound: 4 x --ringbuf-bytes).", "By", MI_GAUGE, true }, read_event_queue_peak },
	{ { "milometer.attribution.deferred_resolved", "Requests BPF deferred and user space attributed.", "1", MI_COUNTER, true }, read_deferred_resolved },
	{ { "milometer.attribution.unknown", "Requests that could not be attributed (head lost or unparseable).", "1", MI_COUNTER, true }, read_deferred_unknown },
	{ { "milometer.targets", "Proxy processes traced.", "{process}", MI_GAUGE, true }, read_targets },
	{ { "milometer.routes.reloads", "Route tables installed.", "1", MI_COUNTER, true }, read_route_reloads },
	{ { "milometer.routes.rejected", "1 while the latest manifests are rejected (previous table active).", "", MI_GAUGE, true }, read_route_error },
	{ { "milometer.contract.reload_failures", "Manifest reloads that failed (previous MetricDefinitions/MetricPolicies kept).", "1", MI_COUNTER, true }, read_contract_reload_failures },
	{ { "milometer.routes.objects_rejected", "Manifest files or Gateway API objects left out of the route table (invalid, over a limit, duplicate); the agent log says why.", "{object}", MI_GAUGE, true }, read_route_obj_rejected },
	{ { "milometer.routes.rules_dropped", "HTTPRoute rules dropped alone from the route table (invalid: a regular expression RE2 refuses, a misspelt match type...); the route's other rules and every other route count, and the agent log says why.", "{rule}", MI_GAUGE, true,
	    .note = "The route is `PartiallyInvalid` in `milometer check`; a route with no valid rule left is counted by `milometer_routes_objects_rejected` instead." }, read_route_rules_dropped },
	{ { "milometer.export.attempts", "OTLP export HTTP requests.", "1", MI_COUNTER, true, .when = WITH_OTLP }, read_export_attempts },
	{ { "milometer.export.failures", "OTLP export requests that failed.", "1", MI_COUNTER, true, .when = WITH_OTLP }, read_export_failures },
	{ { "milometer.export.retries", "OTLP export retries.", "1", MI_COUNTER, true, .when = WITH_OTLP }, read_export_retries },
	{ { "milometer.export.dropped", "OTLP batches dropped (queue full or rejected).", "1", MI_COUNTER, true, .when = WITH_OTLP }, read_export_dropped },
	{ { "milometer.export.queue", "Bytes waiting in the OTLP export queue.", "By", MI_GAUGE, true }, read_export_queue },
	{ { "milometer.export.no_tenant", "OTLP points dropped by --otlp-tenant-from: bound to no tenant and no --otlp-tenant-default.", "1", MI_COUNTER, true,
	    .when = "with --otlp-tenant-from" }, read_no_tenant },
	{ { "milometer.metrics_auth.reviews", "TokenReviews and SubjectAccessReviews sent to authorize /metrics readers.", "1", MI_COUNTER, true, "review",
	    "with --metrics-auth kubernetes" }, read_auth_reviews },
	{ { "milometer.metrics_auth.cache_hits", "/metrics authorization decisions reused from the cache.", "1", MI_COUNTER, true,
	    .when = "with --metrics-auth kubernetes" }, read_auth_cache_hits },
	{ { "milometer.metrics_auth.errors", "Reviews the Kubernetes API did not answer (the scrape was a 503).", "1", MI_COUNTER, true,
	    .when = "with --metrics-auth kubernetes" }, read_auth_errors },
	{ { "milometer.process.cpu.time", "CPU time of the agent process (user + system).", "s", MI_COUNTER, false }, read_cpu },
	{ { "milometer.process.memory.usage", "Resident memory of the agent process.", "By", MI_GAUGE, true }, read_rss },
	{ { "milometer.bpf.run.time", "Time spent in each BPF program (needs kernel.bpf_stats_enabled=1).", "s", MI_COUNTER, false, "program", WITH_BPF_STATS }, read_bpf_run_ns },
	{ { "milometer.bpf.run.count", "Runs of each BPF program (needs kernel.bpf_stats_enabled=1).", "1", MI_COUNTER, true, "program", WITH_BPF_STATS }, read_bpf_run_cnt },
	{ { "milometer.bpf.run.missed", "Runs of each BPF program the kernel skipped: its hook fired inside the same program's run on the same CPU (a softirq interrupting a run in process context). A skipped I/O or close can cost an exchange.", "1", MI_COUNTER, true, "program",
	    "for programs with a skipped run (Linux 5.12+ counts them)" }, read_bpf_run_missed },
	{ { "milometer.capture.mode", "1 for the capture mode in use (sock: socket tracepoints; sys-exit: fallback).", "", MI_GAUGE, true, "mode" }, read_capture_mode },
	{ { "milometer.capture.loops", "1 for the data path build loaded (bpf_loop: Linux 5.17+; bounded: bounded loops, thread links in a hash, for 5.10-5.16).", "", MI_GAUGE, true, "loops" }, read_capture_loops },
	{ { "milometer.capture.parse_steps", "Parser steps per bpf_loop callback loaded: 2 unless MILOMETER_BPF_PARSE_STEPS asks otherwise, fewer when the kernel's verifier found the data path too large with them.", "", MI_GAUGE, false, NULL }, read_parse_steps },
	{ { "milometer.bpf.connections", "Connections the data path holds state for now.", "{connection}", MI_GAUGE, true }, read_conns_open },
	{ CONTRACT_METRICS_OBJECTS_DOC, read_contract },
	/* as kubernetes_feature_enabled: 1 on, 0 off, one series per gate */
	{ { "milometer.feature.enabled", "Feature gate state (1 enabled), by name and stage.", "", MI_GAUGE, true, "name,stage" }, read_feature,
	  .k8s_before = true },
	/* the per-node sizing figures: the limit, the caps it gave, and the
	 * drivers of CPU and memory (connections: milometer.bpf.connections;
	 * requests, series, queue) */
	{ { "milometer.process.memory.limit", "The agent's cgroup memory limit (0: none); the caps follow it.", "By", MI_GAUGE, true }, read_mem_limit },
	{ { "milometer.cap", "Hard caps in effect, by cap (after fitting the memory limit).", "{value}", MI_GAUGE, true, "cap" }, read_cap },
	{ { "milometer.http.exchanges", "HTTP exchanges (request and response) parsed, downstream and "
	    "upstream legs: the CPU driver; its rate is requests/s.", "{exchange}", MI_COUNTER, true }, read_requests },
	{ { "milometer.http2.streams", "HTTP/2 streams by what became of them (exchange, unknown: "
	    "route fields from before the agent attached; lost: open when "
	    "the connection's bytes were lost, not counted).", "{stream}", MI_COUNTER, true, "result" }, read_h2 },
	{ { "milometer.tls.uprobes", "TLS capture's uprobes attached now (0 with the gate off), by kind "
	    "(uprobes; processes hooked now; libraries hooked since the gate "
	    "turned on).", "{item}", MI_GAUGE, true, "kind" }, read_tls },
	{ { "milometer.proxy_pods", "Proxy pods of this node found from the API, by state (pods; "
	    "containers traced; containers waiting for their cgroup or "
	    "Gateway table; container cgroups taken out since start, their "
	    "pod or container gone; Gateways with a route table slot).", "{item}", MI_GAUGE, true, "state",
	    WITH_API }, read_proxy_pods },
};
// clang-format on
#define SM_N (sizeof(self_metric_table) / sizeof(self_metric_table[0]))

static int reg(struct self_metrics *sm, const struct metric_doc *doc)
{
	struct mmetric_desc d = metric_doc__desc(doc);

	return mstore__add_metric(sm->ag->store, &d);
}

static void bpf_doc(int i, char *name, size_t nlen, char *desc, size_t dlen,
		    struct metric_doc *doc)
{
	snprintf(name, nlen, "milometer.bpf.%s", bpf_stats[i].name);
	snprintf(desc, dlen, "BPF data path: %s (summed over CPUs).",
		 bpf_stats[i].name);
	*doc = (struct metric_doc){
		.name = name,
		.help = desc,
		.unit = "1",
		.instrument = MI_COUNTER,
		.is_int = true,
		.note = bpf_stats[i].meaning,
	};
}

struct self_metrics *self_metrics__new(struct agent *ag)
{
	struct self_metrics *sm = calloc(1, sizeof(*sm));
	int err = 0;

	if (!sm)
		return NULL;
	sm->ag = ag;
	sm->id = calloc(SM_N, sizeof(*sm->id));
	if (!sm->id)
		goto fail;
	for (int i = 0; i < MM_STAT__COUNT; i++) {
		char name[64], desc[96]; /* the store copies them */
		struct metric_doc doc;

		bpf_doc(i, name, sizeof(name), desc, sizeof(desc), &doc);
		sm->bpf_id[i] = reg(sm, &doc);
		if (sm->bpf_id[i] < 0)
			err = sm->bpf_id[i];
	}
	for (size_t i = 0; i < SM_N && !err; i++) {
		if (self_metric_table[i].k8s_before && ag->k8s &&
		    !(sm->k8s = k8s_metrics__new(ag->store)))
			err = -ENOMEM;
		sm->id[i] = reg(sm, &self_metric_table[i].doc);
		if (sm->id[i] < 0)
			err = sm->id[i];
	}
	if (!err)
		return sm;
fail:
	self_metrics__free(sm);
	return NULL;
}

void self_metrics__free(struct self_metrics *sm)
{
	if (!sm)
		return;
	k8s_metrics__free(sm->k8s);
	free(sm->id);
	free(sm);
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

/* The sources read by syscall, before the store lock is taken. */
static void read_sources(struct sm_read *r)
{
	struct self_metrics *sm = r->sm;
	struct milometer_bpf *skel = r->ag->skel;
	FILE *f;

	read_bpf_stats(sm);
	for (size_t i = 0; i < NMAPS; i++) {
		struct bpf_map *m =
			bpf_object__find_map_by_name(skel->obj, map_names[i]);

		r->fills[i] = m ? (double)map_count(bpf_map__fd(m),
						    bpf_map__key_size(m)) /
					      bpf_map__max_entries(m)
				: 0;
		sm->fill[i] = r->fills[i];
	}
	r->targets = targets__count(skel);
	if (r->ag->agg)
		aggregate__stats(r->ag->agg, &r->as);
	getrusage(RUSAGE_SELF, &r->ru);
	f = fopen("/proc/self/statm", "r");
	if (f) {
		long size;

		if (fscanf(f, "%ld %ld", &size, &r->rss_pages) != 2)
			r->rss_pages = 0;
		fclose(f);
	}
}

void self_metrics__refresh(struct self_metrics *sm)
{
	struct sm_read r = { .sm = sm, .ag = sm->ag, .now = state__real_ns() };

	read_sources(&r);
	mstore__lock(sm->ag->store);
	for (int i = 0; i < MM_STAT__COUNT; i++)
		set0(&r, sm->bpf_id[i], sm->bpf[i]);
	for (size_t i = 0; i < SM_N; i++) {
		if (self_metric_table[i].k8s_before && sm->k8s)
			k8s_metrics__refresh(sm->k8s, sm->ag->k8s, r.now);
		self_metric_table[i].read(&r, sm->id[i]);
	}
	mstore__unlock(sm->ag->store);
}

int self_metrics__write_reference(FILE *out)
{
	struct metric_doc docs[MM_STAT__COUNT + SM_N];
	char names[MM_STAT__COUNT][64], descs[MM_STAT__COUNT][96];
	size_t n = 0;
	int err;

	for (int i = 0; i < MM_STAT__COUNT; i++, n++) {
		bpf_doc(i, names[i], sizeof(names[i]), descs[i],
			sizeof(descs[i]), &docs[n]);
		/* HELP only names the counter: the reference says what it counts */
		docs[n].help = docs[n].note;
		docs[n].note = NULL;
	}
	err = metric_doc__write_section(
		out, "BPF data path counters",
		"What the kernel side counted, summed over CPUs (the per-CPU map "
		"`mm_stats`); `milometer ctl stats` shows the same figures. A "
		"growing drop counter says which limit to raise.",
		docs, n);
	if (err)
		return err;
	n = 0;
	for (size_t i = 0; i < SM_N; i++)
		docs[n++] = self_metric_table[i].doc;
	return metric_doc__write_section(
		out, "Agent self-metrics",
		"The agent's own health and sizing figures, read at each scrape.",
		docs, n);
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
			json_out__key(out, bpf_stats[i].name);
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
			(unsigned long long)as.events,
			(unsigned long long)as.exchanges,
			(unsigned long long)as.heads,
			(unsigned long long)as.deferred_resolved,
			(unsigned long long)as.deferred_unknown,
			(unsigned long long)as.aborted,
			(unsigned long long)as.keys);
		return;
	}
	fputs("bpf:\n", out);
	for (int i = 0; i < MM_STAT__COUNT; i++)
		fprintf(out, "  %-18s %llu\n", bpf_stats[i].name,
			(unsigned long long)sm->bpf[i]);
	fputs("map fill (last refresh):\n", out);
	for (size_t i = 0; i < NMAPS; i++)
		fprintf(out, "  %-16s %.2f%%\n", map_names[i],
			sm->fill[i] * 100);
	fprintf(out,
		"user space:\n  events %llu, exchanges %llu, deferred heads %llu "
		"(resolved %llu, unknown %llu), aborted %llu, series keys %llu\n",
		(unsigned long long)as.events, (unsigned long long)as.exchanges,
		(unsigned long long)as.heads,
		(unsigned long long)as.deferred_resolved,
		(unsigned long long)as.deferred_unknown,
		(unsigned long long)as.aborted, (unsigned long long)as.keys);
}
