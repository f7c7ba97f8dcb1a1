/* SPDX-License-Identifier: Apache-2.0 */
/* The running agent: every part `milometer run` wires together. */
#ifndef MM_AGENT_AGENT_H
#define MM_AGENT_AGENT_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "agent/k8s/mem_limit.h"
#include "agent/options.h"

struct milometer_bpf;
struct ring_buffer;
struct mstore;
struct route_sync;
struct aggregate;
struct manifest_source;
struct contract;
struct policy_engine;
struct prom_server;
struct otlp_sender;
struct otlp_encoder;
struct self_metrics;

struct agent {
	struct agent_opts *opts;
	struct milometer_bpf *skel;
	struct ring_buffer *rb;
	struct mstore *store;
	struct route_sync *routes;
	struct aggregate *agg;
	struct manifest_source *msrc;
	struct contract *contract;
	struct policy_engine *engine;
	struct prom_server *prom;
	struct otlp_sender *otlp;
	struct otlp_encoder *enc;
	struct self_metrics *self;
	struct mem_limit mem_limit; /* this pod's limit; the caps follow it */
	int ctl_fd;
	uint64_t start_ns;       /* CLOCK_REALTIME */
	uint64_t last_export_ns; /* CLOCK_MONOTONIC */
	volatile bool ready;
	char not_ready[256];
	/* cluster identity as last read; the Prometheus thread reads it */
	pthread_mutex_t ci_lock;
	char cluster_id[64];
	char clusterset[256];
	char cluster_problem[512];
};

int agent__run(struct agent_opts *o);
uint64_t agent__mono_ns(void);
uint64_t agent__real_ns(void);

#endif /* MM_AGENT_AGENT_H */
