/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Proxy processes found from the API: the pods of this node that a Gateway
 * runs (Gateway API's gateway.networking.k8s.io/gateway-name label, or
 * Envoy Gateway's gateway.envoyproxy.io/owning-gateway-name) become targets
 * through their containers' cgroup v2 ids.
 */
#ifndef MM_AGENT_PROXY_PODS_H
#define MM_AGENT_PROXY_PODS_H

#include <stdint.h>

struct k8s_api;
struct milometer_bpf;

struct proxy_pods_stats {
	uint64_t pods;        /* proxy pods seen on this node */
	uint64_t containers;  /* their containers whose cgroup was found */
	uint64_t missing;     /* containers whose cgroup was not (yet) found */
};

/*
 * Walk the pod store when it changed since the last call: every container
 * of a proxy pod has its cgroup id added to mm_target_cgroups and its
 * processes to the targets. Returns 0 or -errno.
 */
int proxy_pods__sync(struct k8s_api *a, struct milometer_bpf *skel,
		     struct proxy_pods_stats *st);

#endif /* MM_AGENT_PROXY_PODS_H */
