// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer run`: load and attach the data path, install the route table,
 * then one thread (the event loop) handles the ring buffer's records and
 * does 1 Hz housekeeping (manifest reloads, target rescans, series expiry,
 * self-metrics, OTLP export). While it is busy, a thread of its own empties
 * the ring into a queue (agent/ring_reader.h), so housekeeping that takes
 * longer than the ring takes to fill loses nothing. The Prometheus server
 * and the OTLP sender have their own threads and only ever touch the
 * metric store under its lock.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "agent/agent.h"
#include "agent/pipeline/aggregate.h"
#include "agent/ctl.h"
#include "agent/config/features.h"
#include "exporter/ui_pages.h"
#include "agent/pipeline/h2_feed.h"
#include "agent/loader.h"
#include "agent/proxy_pods.h"
#include "agent/ring_reader.h"
#include "agent/route_sync.h"
#include "agent/self_metrics.h"
#include "agent/state.h"
#include "agent/targets.h"
#include "agent/tls_capture.h"
#include "agent/k8s/api_source.h"
#include "agent/authz/authz.h"
#include "agent/k8s/config.h"
#include "agent/tenants.h"
#include "exporter/otlp_tenancy.h"
#include "policy/model/metric_store.h"
#include "exporter/otlp_encode.h"
#include "exporter/otlp_sender.h"
#include "exporter/prom_server.h"
#include "milometer.skel.h"
#include "policy/contract/cluster_id.h"
#include "policy/contract/contract.h"
#include "policy/contract/contract_reload.h"
#include "policy/source/manifest_source.h"
#include "policy/contract/policy_engine.h"
#include "policy/gateway/route_compile.h"
#include "policy/util/log.h"

#define OTLP_MAX_POINTS 20000 /* points per request: well under 20 MiB */
#define DRAIN_MS        50    /* queued records handled at least this often */
#define EXIT_DRAINS     64 /* at exit, at most (a drain takes 1 MiB of queue) */

/* An HTTP/2 connection silent this long is forgotten (its close was lost). */
#define H2_IDLE_NS (15 * 60 * 1000000000ULL)

static int on_event(void *ctx, void *data, size_t size)
{
	struct agent *ag = ctx;
	uint8_t type = size ? *(const uint8_t *)data : 0;

	if (type == MM_EVT_H2_DATA || type == MM_EVT_H2_CLOSE)
		return h2_feed__event(ag->h2, data, size);
	if (type == MM_EVT_FORK) {
		/* drain() scans for the new process once the batch is read */
		ag->tls_fork = true;
		return 0;
	}
	return aggregate__event(ag->agg, data, size);
}

static void on_h2_exchange(void *ctx, const struct exchange *e,
			   const char *head, size_t len, bool trunc)
{
	struct agent *ag = ctx;

	aggregate__exchange_head(ag->agg, e, head, len, trunc);
}

/* Returns how many records were handled (at most 1 MiB of them). */
static size_t drain(struct agent *ag)
{
	uint64_t now = state__mono_ns();
	size_t n;

	mstore__lock(ag->store);
	/*
	 * One time stamp for a drain: at most 1 MiB of records, handled in a
	 * few ms (records the loop could not take while busy are that old).
	 */
	aggregate__set_now(ag->agg, state__real_ns());
	n = ring_reader__drain(ag->reader, on_event, ag);
	mstore__unlock(ag->store);
	/*
	 * TLS uprobes are per process: a worker forked since (nginx reload)
	 * is attached as soon as its fork event is read, and a process that
	 * became a target otherwise (exec, cgroup) within 100 ms (a walk of
	 * the target map).
	 */
	if (ag->tls && ag->ready &&
	    (ag->tls_fork || now - ag->tls_scan_ns >= 100000000ULL)) {
		/* re-armed first: a fork during the scan sends its event */
		ag->skel->bss->mm_fork_notify = 1;
		/* attaching uprobes takes a while: the reader thread reads */
		ring_reader__busy(ag->reader, true);
		tls_capture__scan(ag->tls, now, ag->tls_fork);
		ring_reader__busy(ag->reader, false);
		ag->tls_scan_ns = now;
		ag->tls_fork = false;
	}
	return n;
}

/* ready: programs attached and every watched resource listed once */
static int ready_fn(void *ctx, char *why, size_t len)
{
	struct agent *ag = ctx;

	if (!__atomic_load_n(&ag->ready, __ATOMIC_ACQUIRE)) {
		snprintf(why, len, "%s", ag->not_ready);
		return 1;
	}
	if (ag->k8s && !k8s_api__synced(ag->k8s, why, len))
		return 1;
	return 0;
}

/* Re-read the ClusterProperties; say once when they become unusable. */
static void refresh_cluster(struct agent *ag)
{
	struct cluster_identity ci = {};

	if (ag->contract)
		contract__cluster(ag->contract, &ci);
	pthread_mutex_lock(&ag->ci_lock);
	if (strcmp(ag->cluster_problem, ci.problem) && ci.problem[0])
		pr_warn("cluster identity: %s (not attached)\n", ci.problem);
	if (strcmp(ag->cluster_id, ci.id))
		pr_info("cluster id %s\n", ci.id[0] ? ci.id : "(none)");
	snprintf(ag->cluster_id, sizeof(ag->cluster_id), "%s", ci.id);
	snprintf(ag->clusterset, sizeof(ag->clusterset), "%s", ci.clusterset);
	snprintf(ag->cluster_problem, sizeof(ag->cluster_problem), "%s",
		 ci.problem);
	pthread_mutex_unlock(&ag->ci_lock);
}

/* Prometheus: the cluster identity on every series (see cluster_id.h). */
static size_t cluster_labels(void *ctx, struct mlabel *out, size_t max,
			     char *buf, size_t buflen)
{
	struct agent *ag = ctx;
	size_t n = 0, used = 0;

	pthread_mutex_lock(&ag->ci_lock);
	if (ag->cluster_id[0] && n < max) {
		int w = snprintf(buf + used, buflen - used, "%s",
				 ag->cluster_id);

		out[n++] = (struct mlabel){ CLUSTER_ID_ATTR, buf + used };
		used += w + 1;
	}
	if (ag->clusterset[0] && n < max && used < buflen) {
		snprintf(buf + used, buflen - used, "%s", ag->clusterset);
		out[n++] = (struct mlabel){ CLUSTERSET_ATTR, buf + used };
	}
	pthread_mutex_unlock(&ag->ci_lock);
	return n;
}

/* --- Kubernetes API as the manifest source (agent/k8s) --- */
#define K8S_FIRST_SYNC_MS 10000 /* then start with what we have */

static int open_api(struct agent *ag)
{
	struct k8s_api_opts ko = {
		.kubeconfig = ag->opts->kubeconfig,
		.node_name = ag->opts->node_name,
	};
	char err[1024];
	int ret;

	if (!ag->opts->use_api)
		return 0;
	ret = k8s_api__start(&ko, &ag->k8s, err, sizeof(err));
	if (ret) {
		pr_err("%s\n", err);
		return ret;
	}
	if (!k8s_api__wait_synced(ag->k8s, K8S_FIRST_SYNC_MS))
		log__msg(
			LOG_WARNING, "k8s",
			"not every watch has listed yet; starting with what arrived, the rest follows without a restart\n");
	ag->msrc = k8s_api__manifest_source(ag->k8s);
	if (!ag->msrc)
		return -ENOMEM;
	route_sync__set_source(ag->routes, ag->msrc);
	return 0;
}
/* --metrics-auth kubernetes: reviews go to the cluster the agent reads */
static int open_authz(struct agent *ag)
{
	const struct agent_opts *o = ag->opts;
	struct k8s_authz_opts ao = {
		.user_agent = "milometer-agent-authz",
		.ttl_s = o->metrics_auth_ttl_s,
		.max_entries = o->metrics_auth_max,
	};
	char err[1024];
	int ret;

	if (!o->metrics_auth || strcmp(o->metrics_auth, "kubernetes"))
		return 0;
	if (ag->k8s) {
		ao.cfg = k8s_api__config(ag->k8s);
	} else {
		ret = k8s_config__load(o->kubeconfig, &ag->authz_cfg, err,
				       sizeof(err));
		if (ret) {
			pr_err("--metrics-auth kubernetes: %s\n", err);
			return ret;
		}
		ao.cfg = ag->authz_cfg;
	}
	for (size_t i = 0; i < o->nmetrics_auth_extra; i++)
		ao.extra[ao.nextra++] = o->metrics_auth_extra[i];
	ag->authz = k8s_authz__new(&ao, err, sizeof(err));
	if (!ag->authz) {
		pr_err("--metrics-auth kubernetes: %s\n", err);
		return -EINVAL;
	}
	return 0;
}
/* --- end Kubernetes API --- */

/*
 * The manifests directory, read once for the contract and the route table
 * (reload_contract() re-reads it, route_sync__poll() follows).
 */
static int open_manifests(struct agent *ag)
{
	const char *paths[1] = { ag->opts->manifests };
	char err[512];

	if (!ag->opts->manifests || ag->msrc)
		return 0;
	ag->msrc = manifest_source__open_paths(paths, 1, err, sizeof(err));
	if (!ag->msrc) {
		pr_err("%s\n", err);
		return -EINVAL;
	}
	route_sync__share_dir_source(ag->routes, ag->msrc);
	return 0;
}

static int open_contract(struct agent *ag)
{
	if (!ag->msrc)
		return 0;
	ag->contract = contract__new();
	if (!ag->contract)
		return -ENOMEM;
	contract__load(ag->contract, ag->msrc);
	if (contract__rejected(ag->contract))
		pr_warn("some MetricDefinitions/MetricPolicies were rejected: see `milometer ctl policies` or `milometer check --manifests %s`\n",
			ag->opts->manifests);
	ag->engine = policy_engine__new(ag->store, ag->contract);
	if (!ag->engine)
		return -ENOMEM;
	policy_engine__sync(ag->engine, ag->msrc);
	/*
	 * Control-plane series are the same on every node: from the API one
	 * producer (the controller's leader) makes them for the cluster.
	 */
	ag->resource_fields = !strcmp(ag->opts->resource_fields, "on") ||
			      (!strcmp(ag->opts->resource_fields, "auto") &&
			       !ag->opts->use_api);
	if (ag->opts->use_api && !ag->resource_fields)
		pr_info("ResourceFields policies are left to `milometer controller` (one producer for the cluster; --resource-fields on makes them here too)\n");
	return 0;
}

/*
 * The periodic reload goes through contract__reload(), the path the unit
 * tests exercise (test_policy_engine: policy_engine_reload_*). A failure
 * keeps the previous contract and engine; it is logged when it starts and
 * when it clears, not on every tick, and counted.
 */
static void reload_contract(struct agent *ag)
{
	int r;

	if (!ag->msrc)
		return;
	r = contract__reload(ag->msrc, ag->contract, ag->engine);
	if (r < 0) {
		ag->contract_reload_failures++;
		if (r != ag->contract_reload_err)
			pr_err("reloading the manifests in %s failed: %s; the previous MetricDefinitions/MetricPolicies stay in effect (fix the files; retried every tick)\n",
			       ag->opts->manifests, strerror(-r));
		ag->contract_reload_err = r;
		return;
	}
	if (ag->contract_reload_err)
		pr_info("manifests in %s reload again\n", ag->opts->manifests);
	ag->contract_reload_err = 0;
	if (!r)
		return;
	if (contract__rejected(ag->contract))
		pr_warn("some MetricDefinitions/MetricPolicies were rejected: see `milometer ctl policies` or `milometer check --manifests %s`\n",
			ag->opts->manifests);
	refresh_cluster(ag);
}

/*
 * Feature gates: defaults < config featureGates < --feature-gates.
 * A reload re-reads featureGates only; subscribers (the loader) act on what
 * changed.
 */
static int start_feature_gates(struct agent *ag)
{
	char sum[256];
	int ret;

	ag->features = features__new(features__default_specs, FEATURE__COUNT);
	if (!ag->features)
		return -ENOMEM;
	ret = features__apply(ag->features, &ag->opts->fg_config,
			      &ag->opts->fg_flags);
	features__summary(ag->features, sum, sizeof(sum));
	pr_info("feature gates: %s\n", sum);
	return ret < 0 ? ret : 0;
}

/* Gate TLSCapture: load or destroy the TLS object, at start or on reload. */
static int on_tls_gate(void *ctx, int gate, bool enabled)
{
	struct agent *ag = ctx;
	int err = 0;

	if (enabled && !ag->tls) {
		ag->tls = tls_capture__start(ag->skel, ag->opts->pin_dir,
					     ag->opts->max_connections, &err);
		ag->skel->bss->mm_fork_notify = !!ag->tls;
		return ag->tls ? 0 : err;
	}
	if (!enabled && ag->tls) {
		ag->skel->bss->mm_fork_notify = 0;
		tls_capture__stop(ag->tls);
		ag->tls = NULL;
		pr_info("TLS capture off: its uprobes, programs, maps and pins are gone\n");
	}
	return 0;
}

/*
 * Gate HTTP2: a flag the data path reads (its h2 code is part of the
 * parser); connections it follows stop being fed when it turns off.
 */
static int on_h2_gate(void *ctx, int gate, bool enabled)
{
	struct agent *ag = ctx;
	int fd = bpf_map__fd(ag->skel->maps.mm_config);
	struct mm_config cfg = {};
	__u32 zero = 0;

	if (bpf_map_lookup_elem(fd, &zero, &cfg))
		return -errno;
	cfg.flags = enabled ? cfg.flags | MM_CFG_HTTP2
			    : cfg.flags & ~MM_CFG_HTTP2;
	if (bpf_map_update_elem(fd, &zero, &cfg, BPF_ANY))
		return -errno;
	return 0;
}

/* After the data path is loaded: gates that act on it. */
static int attach_feature_gates(struct agent *ag)
{
	int ret;

	ret = features__subscribe(ag->features, FEATURE_HTTP2, on_h2_gate, ag);
	if (ret)
		return ret;
	if (features__enabled(ag->features, FEATURE_HTTP2)) {
		ret = on_h2_gate(ag, FEATURE_HTTP2, true);
		if (ret)
			return ret;
	}

	ret = features__subscribe(ag->features, FEATURE_TLS_CAPTURE,
				  on_tls_gate, ag);
	if (ret)
		return ret;
	if (features__enabled(ag->features, FEATURE_TLS_CAPTURE))
		return on_tls_gate(ag, FEATURE_TLS_CAPTURE, true);
	return 0;
}

static void reload_feature_gates(struct agent *ag)
{
	struct feature_overrides cfg;
	char err[512], sum[256];
	int ret;

	if (!ag->opts->config_file)
		return;
	ret = features__read_config(features__default_specs, FEATURE__COUNT,
				    ag->opts->config_file, &cfg, err,
				    sizeof(err));
	if (ret) {
		pr_warn("feature gates unchanged: %s\n", err);
		return;
	}
	ag->opts->fg_config = cfg;
	if (features__apply(ag->features, &cfg, &ag->opts->fg_flags) == 0)
		return;
	features__summary(ag->features, sum, sizeof(sum));
	pr_info("feature gates: %s\n", sum);
}

static int start_otlp(struct agent *ag)
{
	struct agent_opts *o = ag->opts;
	struct cluster_identity ci = {};
	struct mlabel res[8], cl[2];
	char host[256] = "";
	size_t n = 0, ncl;
	struct otlp_encode_opts eo = {};
	struct otlp_sender_opts so = {
		.endpoint = o->otlp_endpoint,
		.headers = o->otlp_headers,
		.ca_file = o->otlp_ca_file,
		.gzip = o->otlp_gzip,
		.queue_max_bytes = o->otlp_queue_bytes,
		.timeout_ms = o->otlp_timeout_ms,
	};
	char err[512];

	if (!o->otlp_endpoint)
		return 0;
	gethostname(host, sizeof(host) - 1);
	res[n++] = (struct mlabel){ "service.name", "milometer" };
	res[n++] = (struct mlabel){ "service.version", MM_VERSION };
	res[n++] = (struct mlabel){ "host.name", host };
	if (o->node_name)
		res[n++] = (struct mlabel){ "k8s.node.name", o->node_name };
	if (ag->contract) {
		contract__cluster(ag->contract, &ci);
		ncl = cluster_id__attrs(&ci, cl);
		for (size_t i = 0; i < ncl; i++)
			res[n++] = cl[i];
	}
	eo.resource = res;
	eo.nresource = n;
	ag->enc = otlp_encoder__new(&eo);
	if (!ag->enc)
		return -ENOMEM;
	if (o->otlp_tenant_from) {
		struct otlp_tenancy_opts to = {
			.header = o->otlp_tenant_header,
			.attribute = tenants__label(o->otlp_tenant_from),
			.default_tenant = o->otlp_tenant_default,
			.resource = res,
			.nresource = n,
			.tenant = tenants__of_subject,
		};

		if (tenants__label(o->otlp_tenant_from) && !ag->k8s)
			pr_warn("--otlp-tenant-from %s: Namespace labels come from the Kubernetes API; without it only --otlp-tenant-default gets points\n",
				o->otlp_tenant_from);
		ag->tenants = tenants__new(o->otlp_tenant_from);
		to.ctx = ag->tenants;
		ag->tenancy = ag->tenants ? otlp_tenancy__new(&to) : NULL;
		if (!ag->tenancy)
			return -ENOMEM;
	}
	ag->otlp = otlp_sender__start(&so, err, sizeof(err));
	if (!ag->otlp) {
		pr_err("--otlp-endpoint: %s\n", err);
		return -EINVAL;
	}
	return 0;
}

static int emit_tenant(void *ctx, void *buf, size_t len, size_t npoints,
		       const char *header)
{
	struct agent *ag = ctx;

	otlp_sender__enqueue_with(ag->otlp, buf, len, header);
	return 0;
}

static int emit_otlp(void *ctx, void *buf, size_t len, size_t npoints)
{
	struct agent *ag = ctx;

	otlp_sender__enqueue(ag->otlp, buf, len);
	return 0;
}

static void export_otlp(struct agent *ag)
{
	if (!ag->otlp)
		return;
	if (ag->tenancy) {
		tenants__refresh(ag->tenants, ag->k8s);
		otlp_tenancy__export(ag->tenancy, ag->store, state__real_ns(),
				     OTLP_MAX_POINTS, emit_tenant, ag);
		return;
	}
	otlp_encode__store_split(ag->enc, ag->store, state__real_ns(),
				 OTLP_MAX_POINTS, emit_otlp, ag);
}

/* The /ui view's figures: this node's source series. */
static int ui_fetch(void *ctx, struct rt_snap *snap, char *err, size_t errlen)
{
	struct agent *ag = ctx;
	int ret = rt_snap__from_store(snap, ag->store, state__real_ns());

	if (ret)
		snprintf(err, errlen, "%s:%d: collecting the source series: %s",
			 __FILE__, __LINE__, strerror(-ret));
	return ret;
}

static void tick(struct agent *ag, uint64_t ticks)
{
	uint64_t mono = state__mono_ns(), real = state__real_ns();
	struct agent_opts *o = ag->opts;
	uint64_t before = ag->proxy_pods.containers;

	/* the source first: an API change reaches routes in the same tick */
	reload_contract(ag);
	/* pods first: a Gateway new on this node is in the table polled next */
	if (ag->k8s)
		proxy_pods__sync(ag->k8s, ag->skel, ag->routes,
				 &ag->proxy_pods);
	route_sync__poll(ag->routes, mono);
	ctl__expire(ag->ctl, mono);
	if (ag->k8s) {
		/* containers that waited for their Gateway's table */
		if (ag->proxy_pods.missing)
			proxy_pods__sync(ag->k8s, ag->skel, ag->routes,
					 &ag->proxy_pods);
		if (ag->proxy_pods.containers != before)
			pr_info("%llu proxy pods on this node, %llu containers traced, %llu not found yet\n",
				(unsigned long long)ag->proxy_pods.pods,
				(unsigned long long)ag->proxy_pods.containers,
				(unsigned long long)ag->proxy_pods.missing);
	}
	if (ticks % 5 == 0)
		targets__rescan(ag->skel, o);
	/* HTTP/2 decoders whose close never came (idle past the keep-alive) */
	if (ticks % 60 == 0)
		h2_feed__expire(ag->h2, mono, H2_IDLE_NS);
	mstore__lock(ag->store);
	aggregate__maintain(ag->agg, real, o->series_idle_s * 1000000000ULL);
	mstore__unlock(ag->store);
	if (ag->engine && ag->resource_fields)
		policy_engine__collect_resource_fields(ag->engine, real);
	self_metrics__refresh(ag->self);
	if (ag->otlp &&
	    mono - ag->last_export_ns >= o->export_interval_s * 1000000000ULL) {
		ag->last_export_ns = mono;
		export_otlp(ag);
	}
}

static int add_fd(int ep, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static int main_loop(struct agent *ag)
{
	struct itimerspec its = {
		.it_interval.tv_sec = 1,
		.it_value.tv_sec = 1,
	};
	int ep = -1, sfd = -1, tfd = -1, rbfd, ringfd, err = 0;
	uint64_t ticks = 0, last_drain = 0;
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC);
	tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	ep = epoll_create1(EPOLL_CLOEXEC);
	rbfd = ring_reader__fd(ag->reader);
	ringfd = ring_reader__ring_fd(ag->reader);
	if (sfd < 0 || tfd < 0 || ep < 0 ||
	    timerfd_settime(tfd, 0, &its, NULL) || add_fd(ep, sfd) ||
	    add_fd(ep, tfd) || add_fd(ep, rbfd) || add_fd(ep, ringfd) ||
	    (ag->ctl && ctl__attach(ag->ctl, ep))) {
		err = -errno;
		pr_err("event loop setup failed: %s\n", strerror(errno));
		goto cleanup;
	}
	for (;;) {
		struct epoll_event evs[8];
		/* BPF wakes us at 1/8 full: read at least every 50 ms */
		int n = epoll_wait(ep, evs, 8, DRAIN_MS);

		if (n < 0 && errno != EINTR) {
			err = -errno;
			break;
		}
		/* also when other fds keep the wait from timing out */
		if (n <= 0 ||
		    state__mono_ns() - last_drain >= DRAIN_MS * 1000000ULL) {
			drain(ag);
			last_drain = state__mono_ns();
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == rbfd || fd == ringfd) {
				drain(ag);
				last_drain = state__mono_ns();
			} else if (fd == sfd) {
				struct signalfd_siginfo si;

				if (read(sfd, &si, sizeof(si)) == sizeof(si) &&
				    si.ssi_signo != SIGHUP) {
					pr_err("%s, detaching\n",
					       strsignal(si.ssi_signo));
					goto cleanup;
				}
				/* SIGHUP: reload now */
				ring_reader__busy(ag->reader, true);
				reload_feature_gates(ag);
				tick(ag, ++ticks);
				ring_reader__busy(ag->reader, false);
			} else if (fd == tfd) {
				uint64_t exp;

				ring_reader__busy(ag->reader, true);
				if (read(tfd, &exp, sizeof(exp)) > 0)
					tick(ag, ++ticks);
				ring_reader__busy(ag->reader, false);
			} else if (ag->ctl) {
				/* a dump or a top page may take a while */
				ring_reader__busy(ag->reader, true);
				ctl__event(ag->ctl, ag, fd, evs[i].events);
				ring_reader__busy(ag->reader, false);
			}
		}
	}
cleanup:
	if (ep >= 0)
		close(ep);
	if (sfd >= 0)
		close(sfd);
	if (tfd >= 0)
		close(tfd);
	return err;
}

int agent__run(struct agent_opts *o)
{
	struct loader_opts lo = {
		.pin_dir = o->pin_dir,
		.ringbuf_bytes = o->ringbuf_bytes,
		.max_connections = o->max_connections,
		.capture = o->capture,
	};
	struct mstore_opts so = {
		.max_series_per_metric = o->max_series,
		.idle_expiry_ns = o->series_idle_s * 1000000000ULL,
		.keep_delta = o->otlp_endpoint != NULL,
	};
	struct agent ag = {
		.opts = o,
		.ci_lock = PTHREAD_MUTEX_INITIALIZER,
	};
	char err[1024];
	uint32_t conn_key, conn_val;
	sigset_t mask;
	int ret;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	/* blocked before any thread starts, so only the signalfd sees them */
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	ag.start_ns = state__real_ns();
	ag.not_ready = "starting";
	/* first: a second agent on these pins must not touch the running one */
	ret = loader__lock_pin_dir(o->pin_dir);
	if (ret)
		goto cleanup;
	/* caps sized to the pod's memory limit before maps and store exist */
	ret = loader__conn_sizes(&conn_key, &conn_val);
	if (ret)
		goto cleanup;
	mem_limit__apply(o, mem_limit__conn_bytes(conn_key, conn_val),
			 &ag.mem_limit);
	lo.ringbuf_bytes = o->ringbuf_bytes;
	lo.max_connections = o->max_connections;
	so.max_series_per_metric = o->max_series;

	ag.store = mstore__new(&so);
	if (!ag.store) {
		ret = -ENOMEM;
		goto cleanup;
	}
	ret = open_authz(&ag);
	if (ret)
		goto cleanup;
	/* /healthz and /readyz (503 with the stage) while the rest starts */
	if (o->prometheus_listen && o->prometheus_listen[0]) {
		struct prom_server_opts po = {
			.listen_addr = o->prometheus_listen,
			.store = ag.store,
			.ready_fn = ready_fn,
			.const_labels_fn = cluster_labels,
			.ctx = &ag,
			.auth = ag.authz ? k8s_authz__prom_auth(ag.authz)
					 : NULL,
		};

		ag.ui = ui__new(ui_fetch, &ag);
		po.pages = ui__pages(ag.ui, &po.npages);
		ag.prom = prom_server__start(&po, err, sizeof(err));
		if (!ag.prom) {
			pr_err("--prometheus-listen %s: %s\n",
			       o->prometheus_listen, err);
			ret = -EINVAL;
			goto cleanup;
		}
	}
	ret = start_feature_gates(&ag);
	if (ret)
		goto cleanup;
	ag.not_ready = "loading and attaching the BPF programs";
	ret = loader__start(&lo, &ag.skel);
	if (ret)
		goto cleanup;
	ret = targets__init(ag.skel, o);
	if (ret)
		goto cleanup;
	ret = attach_feature_gates(&ag);
	if (ret)
		goto cleanup;
	ag.routes = route_sync__new(ag.skel, o->manifests, o->gateway);
	if (!ag.routes) {
		ret = -ENOMEM;
		goto cleanup;
	}
	for (size_t i = 0; i < o->nlistener_port; i++)
		route_sync__map_listener_port(ag.routes, o->listener_port[i][0],
					      o->listener_port[i][1]);
	ag.not_ready =
		"waiting for the first list of every watched Kubernetes resource";
	ret = open_api(&ag);
	if (ret)
		goto cleanup;
	ag.not_ready = "loading routes and policies";
	ret = open_manifests(&ag);
	if (ret)
		goto cleanup;
	ret = route_sync__load(ag.routes, err, sizeof(err));
	if (ret) {
		pr_err("%s\n", err);
		ret = -EINVAL;
		goto cleanup;
	}
	ret = open_contract(&ag);
	if (ret)
		goto cleanup;
	ag.agg = aggregate__new(ag.store, route_sync__table_fn, ag.routes,
				o->export_source_metrics);
	ag.self = self_metrics__new(&ag);
	ag.h2 = h2_feed__new(on_h2_exchange, &ag);
	if (!ag.agg || !ag.self || !ag.h2) {
		ret = -ENOMEM;
		goto cleanup;
	}
	ag.reader = ring_reader__start(
		bpf_map__fd(ag.skel->maps.mm_events),
		(uint64_t)o->ringbuf_bytes * OPT_EVENT_QUEUE_PER_RING, &ret);
	if (!ag.reader)
		goto cleanup;
	aggregate__set_engine(ag.agg, ag.engine);
	refresh_cluster(&ag);
	ag.ctl = ctl__open(o->socket_path);
	if (!ag.ctl) {
		ret = -EINVAL;
		goto cleanup;
	}
	ret = start_otlp(&ag);
	if (ret)
		goto cleanup;
	self_metrics__refresh(ag.self);
	ag.last_export_ns = state__mono_ns();
	__atomic_store_n(&ag.ready, true, __ATOMIC_RELEASE);
	pr_info("attached (capture mode %s, loops %s), %u parser steps per callback; %d proxy processes, %zu routes; metrics on %s\n",
		loader__capture_mode(), loader__loops(), loader__parse_steps(),
		targets__count(ag.skel),
		route_sync__current(ag.routes)->nroutes,
		ag.prom ? o->prometheus_listen : "(no prometheus)");
	ret = main_loop(&ag);
	ag.not_ready = "stopping";
	__atomic_store_n(&ag.ready, false, __ATOMIC_RELEASE);
	/*
	 * What is already in the ring buffer still counts: the queue emptied
	 * first, so the reader's last read finds room.
	 */
	for (int i = 0; i < EXIT_DRAINS && drain(&ag); i++)
		;
	ring_reader__stop(ag.reader);
	/* BPF still runs: under load the ring never reads empty */
	for (int i = 0; i < EXIT_DRAINS && drain(&ag); i++)
		;
	if (ag.otlp) {
		self_metrics__refresh(ag.self);
		export_otlp(&ag);
	}
cleanup:
	prom_server__stop(ag.prom);
	k8s_authz__free(ag.authz);
	k8s_config__free(ag.authz_cfg);
	ui__free(ag.ui);
	if (ag.otlp)
		otlp_sender__stop(ag.otlp, 2000);
	otlp_encoder__free(ag.enc);
	otlp_tenancy__free(ag.tenancy);
	tenants__free(ag.tenants);
	ctl__close(ag.ctl);
	ring_reader__free(ag.reader);
	h2_feed__free(ag.h2, state__mono_ns());
	aggregate__free(ag.agg);
	self_metrics__free(ag.self);
	features__free(ag.features);
	if (ag.engine) {
		policy_engine__free(ag.engine);
	}
	contract__free(ag.contract);
	manifest_source__free(ag.msrc);
	k8s_api__free(ag.k8s);
	route_sync__free(ag.routes);
	tls_capture__stop(ag.tls);
	loader__stop(ag.skel, o->pin_dir);
	loader__unlock_pin_dir(o->pin_dir);
	mstore__free(ag.store);
	return ret;
}
