/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `milometer controller`: the one writer of MetricDefinition and
 * MetricPolicy status. Replicas elect a leader with a Lease; the leader
 * validates the objects with the same contract code the agents run and
 * writes their Accepted and ResolvedRefs conditions (metav1.Condition,
 * observedGeneration, lastTransitionTime kept while the status holds)
 * through the /status subresource by server-side apply, field manager
 * "milometer", force. Conditions that did not change are never written.
 * Programmed is per node and stays in the agents' self-metrics; HTTPRoute
 * and Gateway status belong to the gateway's controller and are not
 * touched. The leader also evaluates the ResourceFields policies (series
 * from control-plane objects, the same for every node) and serves them on
 * its /metrics: one producer for the cluster, where every node agent would
 * emit the same series (agents leave them out when their source is the
 * API).
 */
#ifndef MM_AGENT_K8S_CONTROLLER_H
#define MM_AGENT_K8S_CONTROLLER_H

#include "agent/controller/controller_translate.h"
#include "agent/authz/authz.h"

struct controller_opts {
	const char *kubeconfig; /* NULL: $KUBECONFIG, then in-cluster */
	const char *ns;         /* the Lease's; NULL or "": milometer */
	const char *identity;   /* this replica; NULL or "": host_pid */
	const char *lease_name;
	const char *listen;   /* /metrics and /ui; "": none */
	const char *prom_url; /* where /ui reads the agents' series */
	const char *auth;     /* --metrics-auth: none or kubernetes */
	struct k8s_authz_opts authz;
	struct ctrl_translate tr; /* --translate targets (the controller's now) */
};

/* Defaults, from $POD_NAMESPACE and $POD_NAME where set. */
void controller__defaults(struct controller_opts *o);
/* Runs until SIGTERM/SIGINT. Returns 0, or 1 when it could not start. */
int controller__run(struct controller_opts *o);

#endif /* MM_AGENT_K8S_CONTROLLER_H */
