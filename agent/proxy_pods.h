/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Proxy processes found from the API: the pods of this node that a Gateway
 * runs (Gateway API's gateway.networking.k8s.io/gateway-name label, the
 * Gateway in the pod's namespace, or Envoy Gateway's
 * gateway.envoyproxy.io/owning-gateway-name/-namespace) become targets
 * through their containers' cgroup v2 ids.
 */
#ifndef MM_AGENT_PROXY_PODS_H
#define MM_AGENT_PROXY_PODS_H

#include <stdint.h>

struct k8s_api;
struct milometer_bpf;
struct route_sync;

struct proxy_pods_stats {
	uint64_t pods;       /* proxy pods seen on this node */
	uint64_t containers; /* their containers whose cgroup was found */
	uint64_t missing; /* containers whose cgroup (or Gateway's table) is not there yet */
	uint64_t no_slot; /* pods past MM_GW_SLOTS Gateways: default table */
	uint64_t removed; /* container cgroups taken out (pod or container gone), ever */
};

/*
 * Walk the pod store when it changed since the last call: every container
 * of a proxy pod has its cgroup id added to mm_target_cgroups and its
 * processes to the targets, with the gateway slot of the Gateway the pod
 * runs (from its labels), so its requests are matched against that
 * Gateway's routes only. A Gateway seen for the first time gets a slot and
 * its containers wait for the route table that holds it (route_sync's next
 * poll): call again after the poll. A container cgroup the walk no longer
 * finds (pod deleted, container replaced) leaves mm_target_cgroups.
 * Returns 0 or -errno.
 */
int proxy_pods__sync(struct k8s_api *a, struct milometer_bpf *skel,
		     struct route_sync *rs, struct proxy_pods_stats *st);

#endif /* MM_AGENT_PROXY_PODS_H */
