/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The running agent's state, in one header of its own (as Falco's libpman
 * keeps its state.h): agent.c owns and wires it; ctl.c and self_metrics.c
 * read it through this header and never call back into agent.c, so the
 * include graph has no cycle (agent.c -> ctl.c, self_metrics.c -> state.h).
 */
#ifndef MM_AGENT_STATE_H
#define MM_AGENT_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "agent/node/mem_limit.h"
#include "agent/config/options.h"
#include "agent/proxy_pods.h"

struct milometer_bpf;
struct ring_reader;
struct mstore;
struct route_sync;
struct aggregate;
struct manifest_source;
struct contract;
struct policy_engine;
struct prom_server;
struct otlp_sender;
struct otlp_encoder;
struct otlp_tenancy;
struct tenants;
struct self_metrics;
struct k8s_api;
struct k8s_authz;
struct k8s_config;
struct features;
struct ctl;
struct ui;

struct agent {
	struct agent_opts *opts;
	struct milometer_bpf *skel;
	struct ring_reader *reader;
	struct mstore *store;
	struct route_sync *routes;
	struct aggregate *agg;
	struct manifest_source *msrc;
	struct contract *contract;
	struct policy_engine *engine;
	int contract_reload_err; /* last contract__reload() error, 0 */
	uint64_t contract_reload_failures;
	struct prom_server *prom;
	struct otlp_sender *otlp;
	struct otlp_encoder *enc;
	struct otlp_tenancy *tenancy; /* --otlp-tenant-from, or NULL */
	struct tenants *tenants;      /* its object -> tenant lookup */
	struct self_metrics *self;
	struct k8s_api *k8s;     /* routes and policies from the API, or NULL */
	struct k8s_authz *authz; /* --metrics-auth kubernetes, or NULL */
	struct k8s_config *authz_cfg; /* its own API config without k8s */
	struct features
		*features; /* gates (KEP-3920); subscribe to act on changes */
	struct tls_capture *tls; /* gate TLSCapture on: its BPF object, uprobes */
	uint64_t tls_scan_ns;    /* CLOCK_MONOTONIC of its last process scan */
	bool tls_fork;           /* a fork event came: scan after the batch */
	struct h2_feed *h2;      /* HTTP/2 connections' decoders (gate HTTP2) */
	struct mem_limit mem_limit; /* this pod's limit; the caps follow it */
	struct proxy_pods_stats proxy_pods; /* proxy pods found from the API */
	struct ctl *ctl;                    /* debug socket, NULL when off */
	struct ui *ui;                      /* the /ui pages beside /metrics */
	uint64_t start_ns;                  /* CLOCK_REALTIME */
	uint64_t last_export_ns;            /* CLOCK_MONOTONIC */
	volatile bool ready;
	bool resource_fields; /* this agent produces ResourceFields series */
	/* what startup is doing (a literal), /readyz's reason before ready */
	const char *_Atomic not_ready;
	/* cluster identity as last read; the Prometheus thread reads it */
	pthread_mutex_t ci_lock;
	char cluster_id[64];
	char clusterset[256];
	char cluster_problem[512];
};

static inline uint64_t state__mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static inline uint64_t state__real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif /* MM_AGENT_STATE_H */
