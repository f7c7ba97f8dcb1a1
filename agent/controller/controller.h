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

int controller__main(int argc, char **argv);

#endif /* MM_AGENT_K8S_CONTROLLER_H */
