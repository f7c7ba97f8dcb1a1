/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Cluster identity from the About API (KEP-2149, about.k8s.io): the
 * cluster-scoped ClusterProperty named "cluster.clusterset.k8s.io" holds
 * this cluster's id in spec.value, the one named "clusterset.k8s.io" the
 * ClusterSet it belongs to. The id must be an RFC 1123 DNS label (at most
 * 63 characters of [a-z0-9-], alphanumeric at both ends); an invalid one is
 * reported (Accepted=False InvalidClusterID on the ClusterProperty, a log
 * line, the self-metric) and not attached. The ClusterSet value must be a
 * non-empty RFC 1123 subdomain (at most 253 characters).
 *
 * Attached to everything the agent exports, as OTLP resource attributes
 *   k8s.cluster.id       the cluster id
 *   k8s.clusterset.name  the ClusterSet
 * and as Prometheus labels cluster_id / clusterset (or on target_info).
 * OTel semantic conventions have k8s.cluster.name and k8s.cluster.uid (the
 * kube-system namespace UID); neither is this KEP's id, so we use our own.
 */
#ifndef MM_POLICY_CLUSTER_ID_H
#define MM_POLICY_CLUSTER_ID_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/model/metric_store.h"
#include "policy/contract/crd_fields.h"

#define CLUSTER_PROPERTY_KIND  "ClusterProperty"
#define CLUSTER_PROPERTY_GROUP "about.k8s.io"
#define CLUSTER_ID_PROPERTY    "cluster.clusterset.k8s.io"
#define CLUSTERSET_PROPERTY    "clusterset.k8s.io"

#define CLUSTER_ID_ATTR       "k8s.cluster.id"
#define CLUSTERSET_ATTR       "k8s.clusterset.name"
#define CLUSTER_ID_PROM_LABEL "cluster_id"
#define CLUSTERSET_PROM_LABEL "clusterset"

struct manifest_source;
struct mobject;

struct cluster_identity {
	char id[64];          /* "" when absent or invalid */
	char clusterset[254]; /* "" when absent or invalid */
	bool id_invalid;      /* a property exists but its value is unusable */
	bool clusterset_invalid;
	char problem[COND_MSG_MAX]; /* why, with file:line */
};

bool cluster_id__valid_id(const char *s);
bool cluster_id__valid_clusterset(const char *s);

/* Is this a ClusterProperty we read (either well-known name)? */
bool cluster_id__is_property(const struct mobject *o);
/*
 * Validate one well-known ClusterProperty; -EINVAL with reason
 * InvalidClusterID / InvalidClusterSet / InvalidField and file:line.
 */
int cluster_id__check_property(const struct mobject *o, struct crd_err *e);

/* Read both properties from the source (first valid one of each name). */
void cluster_id__read(const struct manifest_source *src,
		      struct cluster_identity *out);

/*
 * Resource attributes to attach: fills up to 2 labels (borrowing from ci)
 * with the OTLP names above and returns how many.
 */
size_t cluster_id__attrs(const struct cluster_identity *ci,
			 struct mlabel out[2]);

#endif /* MM_POLICY_CLUSTER_ID_H */
