/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Leader election with a coordination.k8s.io/v1 Lease, as client-go's
 * tools/leaderelection does it: create the Lease if absent; renew our own;
 * respect another holder's until leaseDurationSeconds have passed since
 * WE last saw its record change (local clocks only, no clock sync needed);
 * then take it over with leaseTransitions + 1. Optimistic concurrency via
 * resourceVersion (a 409 means someone else won). A leader that cannot
 * renew for the renew deadline steps down. Like client-go it does not
 * fence: two leaders for a moment are possible, so what the leader writes
 * must be idempotent (server-side apply with force is).
 */
#ifndef MM_AGENT_K8S_LEASE_H
#define MM_AGENT_K8S_LEASE_H

#include <stdbool.h>
#include <stdint.h>

struct k8s_http;
struct k8s_lease;

struct k8s_lease_opts {
	struct k8s_http *http;
	const char *ns, *name, *identity;
	uint32_t duration_s;       /* 0: 15 */
	uint32_t renew_deadline_s; /* 0: 10 */
};

struct k8s_lease *k8s_lease__new(const struct k8s_lease_opts *o);
void k8s_lease__free(struct k8s_lease *l);
/* One try (call every retry period, 2 s). True while we are the leader. */
bool k8s_lease__try(struct k8s_lease *l);
/* Give the lease up (holderIdentity "") so another replica takes over now. */
void k8s_lease__release(struct k8s_lease *l);
uint64_t k8s_lease__transitions(const struct k8s_lease *l);

#endif /* MM_AGENT_K8S_LEASE_H */
