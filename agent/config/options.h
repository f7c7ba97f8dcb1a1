/* SPDX-License-Identifier: Apache-2.0 */
/* `milometer run` settings: defaults, YAML config file, then flags. */
#ifndef MM_AGENT_OPTIONS_H
#define MM_AGENT_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "agent/config/features.h"

#define OPT_MAX_LIST 32
/*
 * The agent's bound on ring-buffer records queued in user space, in ring
 * buffers' worth (ringbuf_bytes): the memory budget
 * (agent/node/mem_limit.c) counts it with the ring.
 */
#define OPT_EVENT_QUEUE_PER_RING 4

struct agent_opts {
	const char *config_file;
	const char *manifests; /* directory of YAML manifests */
	const char *gateway;   /* "NS/NAME" or NULL: every Gateway */
	const char *proxy_exe[OPT_MAX_LIST];
	size_t nproxy_exe;
	int proxy_pid[OPT_MAX_LIST];
	size_t nproxy_pid;
	const char *proxy_cgroup[OPT_MAX_LIST];
	size_t nproxy_cgroup;
	/*
	 * --listener-port LISTENER_PORT=SOCKET_PORT: the proxy accepts a
	 * Gateway listener's connections on another port (no cluster to ask
	 * the Gateway's Service); [i][0] listener port, [i][1] socket port.
	 */
	uint16_t listener_port[OPT_MAX_LIST][2];
	size_t nlistener_port;
	const char *prometheus_listen; /* "" disables */
	const char *socket_path;
	const char *pin_dir;
	const char *otlp_endpoint; /* NULL: no OTLP */
	const char *otlp_headers; /* "k=v,k2=v2"; also $MILOMETER_OTLP_HEADERS */
	const char *otlp_ca_file;
	bool otlp_gzip;
	/* one request per tenant: "namespace" or "namespace-label:KEY" */
	const char *otlp_tenant_from;
	const char *otlp_tenant_header;  /* NULL: X-Scope-OrgID; "": none */
	const char *otlp_tenant_default; /* NULL: drop points of no tenant */
	uint32_t otlp_queue_bytes;
	uint32_t otlp_timeout_ms;
	uint32_t export_interval_s;
	uint32_t ringbuf_bytes;     /* power of two, >= 4096 */
	uint32_t max_connections;   /* mm_conns entries */
	uint32_t max_series;        /* per metric */
	uint32_t series_idle_s;     /* 0: never expire */
	bool export_source_metrics; /* envoy.* names as well as targets */
	/*
	 * ResourceFields (control-plane) series: "auto" produces them from
	 * --manifests only; from the API `milometer controller` produces them
	 * once for the cluster, not every node. "on", "off" force it.
	 */
	const char *resource_fields;
	const char *node_name; /* k8s.node.name; $NODE_NAME, hostname */
	/* --- Kubernetes API (agent/k8s) --- */
	const char *kubeconfig; /* --kubeconfig; NULL: $KUBECONFIG/in-cluster */
	bool use_api;           /* routes and policies from the API */
	char node_buf[256];
	const char *capture; /* "auto", "sock" or "sys-exit" */
	/* /metrics access (agent/authz/authz.h): "none" or "kubernetes" */
	const char *metrics_auth;
	uint32_t metrics_auth_ttl_s; /* 0: 30 */
	uint32_t metrics_auth_max;   /* decisions cached; 0: 10000 */
	const char *metrics_auth_extra[16];
	size_t nmetrics_auth_extra;
	bool verbose;
	/* feature gates: config file's featureGates, then flags */
	struct feature_overrides fg_config;
	struct feature_overrides fg_flags;
	/* owned strings from the config file */
	char *owned[128];
	size_t nowned;
};

void options__defaults(struct agent_opts *o);
/*
 * "LISTENER_PORT=SOCKET_PORT" into o->listener_port (a listener already
 * there is remapped). -EINVAL after printing what to fix, naming `where`.
 */
int options__listener_port(struct agent_opts *o, const char *arg,
			   const char *where);
/*
 * Parse `milometer run` arguments (argv[0] is "run"). A --config file is
 * read first, so flags override it. Returns 0, 1 when --help was printed,
 * or -EINVAL after printing what to fix.
 */
int options__parse(struct agent_opts *o, int argc, char **argv);
void options__free(struct agent_opts *o);
void options__usage(FILE *out);

#endif /* MM_AGENT_OPTIONS_H */
