/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The Kubernetes API as a manifest source: one reflector per watched
 * resource (Gateways, HTTPRoutes, MetricDefinitions, MetricPolicies, the
 * two About-API ClusterProperties by name, Namespaces, and this node's
 * Pods), and a msrc backend that turns the stores into the same snapshot
 * the manifests directory gives, so the route table swap and the contract
 * reload work unchanged. While the API is away the last snapshot stays.
 */
#ifndef MM_AGENT_K8S_API_SOURCE_H
#define MM_AGENT_K8S_API_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct manifest_source;
struct k8s_api;
struct k8s_store;
struct k8s_reflector;
struct k8s_http_stats;
struct k8s_config;

struct k8s_api_opts {
	const char *kubeconfig; /* NULL: $KUBECONFIG, in-cluster, ~/.kube */
	const char *node_name;  /* Pods of this node; NULL: no pod watch */
	const char *user_agent; /* NULL: "milometer/<version>" */
	uint32_t min_watch_s; /* 0: 300 ($MILOMETER_K8S_WATCH_TIMEOUT for tests) */
	bool only_routes;     /* watch Gateways and HTTPRoutes only */
};

int k8s_api__start(const struct k8s_api_opts *o, struct k8s_api **out,
		   char *err, size_t errlen);
void k8s_api__free(struct k8s_api *a);
/*
 * Wait until every reflector has listed once or knows its resource is
 * absent or forbidden, at most timeout_ms. True when all listed.
 */
bool k8s_api__wait_synced(struct k8s_api *a, uint32_t timeout_ms);
/*
 * The same test without waiting, for /readyz: true when every watch has
 * listed once (or knows its resource absent, forbidden or unauthorized);
 * otherwise false with a one-line reason in why.
 */
bool k8s_api__synced(struct k8s_api *a, char *why, size_t len);
/* A manifest source reading the stores; free it before the k8s_api. */
struct manifest_source *k8s_api__manifest_source(struct k8s_api *a);
size_t k8s_api__nreflectors(const struct k8s_api *a);
struct k8s_reflector *k8s_api__reflector(struct k8s_api *a, size_t i);
/* The store of a resource by plural ("pods"), NULL when not watched. */
struct k8s_store *k8s_api__store(struct k8s_api *a, const char *plural);
struct k8s_http_stats *k8s_api__http_stats(struct k8s_api *a);
const char *k8s_api__server(const struct k8s_api *a);
struct k8s_config *k8s_api__config(struct k8s_api *a);
/* One line per watch for `milometer ctl`, or JSON. */
void k8s_api__dump(struct k8s_api *a, FILE *out, int json);

#endif /* MM_AGENT_K8S_API_SOURCE_H */
