/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who may read /metrics, decided by the Kubernetes API the way
 * kube-rbac-proxy does, then narrowed per object (docs/tenancy.md):
 *   1. the bearer token -> TokenReview (401 when missing or not
 *      authenticated)
 *   2. SubjectAccessReview get on the non-resource URL /metrics: allowed
 *      reads everything (what a cluster's Prometheus has)
 *   3. otherwise, per object a series is bound to (mstore__bind): a
 *      SubjectAccessReview get on its group/resource in its namespace
 *      (namespace-wide), and when that is denied one naming the object;
 *      the caller reads exactly the series of allowed objects, never a
 *      series bound to nothing (self-metrics, unmatched traffic); 403 when
 *      that is nothing.
 * Every review carries the TokenReview's user, uid, groups and extra
 * unchanged, plus configured extra fields (Milo's authorization webhook
 * reads iam.miloapis.com/parent-* extras). Decisions are cached per
 * (user, uid, groups, extra, attributes) for a TTL with a bound on entries;
 * an API server that cannot answer fails closed: 503 unless every decision
 * needed is cached and fresh. A scrape spends at most a budget of time on
 * reviews (503 past it; what was decided stays cached for the next).
 */
#ifndef MM_AGENT_AUTHZ_H
#define MM_AGENT_AUTHZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct k8s_config;
struct prom_auth;
struct mstore;

#define K8S_AUTHZ_MAX_EXTRA 16

struct k8s_authz_opts {
	struct k8s_config *cfg; /* where reviews go (borrowed) */
	const char *user_agent;
	uint32_t ttl_s;       /* 0: 30 */
	uint32_t max_entries; /* decisions cached; 0: 10000 */
	uint32_t timeout_s;   /* per review; 0: 5 */
	/*
	 * Time one scrape may spend on reviews (0: 5000 ms); past it the
	 * scrape is a 503 and the next one goes on with the decisions cached.
	 */
	uint32_t budget_ms;
	/*
	 * "KEY=VALUE" added to every SubjectAccessReview's extra (appended to
	 * the key's values); "{namespace}" in VALUE is the reviewed object's
	 * namespace (Milo: iam.miloapis.com/parent-name={namespace} when
	 * projects map to namespaces).
	 */
	const char *extra[K8S_AUTHZ_MAX_EXTRA];
	size_t nextra;
};

struct k8s_authz_stats {
	uint64_t token_reviews;  /* sent */
	uint64_t access_reviews; /* SubjectAccessReviews sent */
	uint64_t cache_hits;
	uint64_t errors;    /* reviews the API did not answer */
	uint64_t evictions; /* entries pushed out by the bound */
	uint64_t entries;
};

struct k8s_authz;

/* NULL with the reason in err. */
struct k8s_authz *k8s_authz__new(const struct k8s_authz_opts *opts, char *err,
				 size_t errlen);
void k8s_authz__free(struct k8s_authz *a);
/* The hooks prom_server_opts.auth takes; valid while a lives. */
const struct prom_auth *k8s_authz__prom_auth(struct k8s_authz *a);
void k8s_authz__stats(struct k8s_authz *a, struct k8s_authz_stats *st);
/* "KEY=VALUE" as opts.extra takes it; false with what to fix in err. */
bool k8s_authz__valid_extra(const char *kv, char *err, size_t errlen);

#endif /* MM_AGENT_AUTHZ_H */
