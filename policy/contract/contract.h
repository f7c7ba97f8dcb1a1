/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The metric contract: every MetricDefinition and MetricPolicy read from a
 * manifest source, validated, with conditions, plus the well-known
 * ClusterProperty objects. One bad object never affects the others.
 *
 * Conditions:
 *   MetricDefinition  Accepted: True TelemetryRegistered, or False with
 *                     InvalidName, InvalidUnit, UnknownInstrument,
 *                     InvalidLabel, DuplicateMetric, ImmutableFieldChanged,
 *                     UnknownField, InvalidField, UnsupportedVersion,
 *                     DuplicateObject.
 *   MetricPolicy      Accepted: True Accepted, or False with InvalidCEL,
 *                     LabelSchemaMismatch, IncompatibleInstrument,
 *                     Conflicted, UnknownField, InvalidField,
 *                     UnknownAttribute, UnknownSourceMetric (policy_lint.h:
 *                     what a policy names against what exists; its
 *                     warnings are kept with the object and rendered)...
 *                     ResolvedRefs: True ResolvedRefs, or False with
 *                     TargetNotFound, SubjectMismatch.
 *                     Programmed: set by the policy engine at run time
 *                     (True Programmed / False NoSource, NoSubjects, ...).
 *   ClusterProperty   Accepted: True Accepted, or False InvalidClusterID,
 *                     InvalidClusterSet, InvalidField.
 *
 * Deterministic tie-breaks (oldest wins, as with Gateway API conflicts):
 * - Two definitions with one spec.metric.name: the one that already owned
 *   the name in the previous load keeps it; otherwise the older
 *   metadata.creationTimestamp wins (objects without one count as newest),
 *   then the lexically smaller object name. The others get DuplicateMetric.
 *   The seed's "complete" example and its scenario twin share a name: alone
 *   each is accepted; together gateway-httproute-delivery-upstream-request-
 *   latency wins by name and gateway-httproute-upstream-latency is rejected.
 * - Two accepted policies feeding one target metric from the same source
 *   (the same DataPlane metricName, or both ResourceFields) would count
 *   twice: the same rule picks one, the others get Accepted=False Conflicted.
 * - Stability: a new version of an accepted definition (same object name)
 *   that changes name, unit, instrument or temporality, or drops a label, is
 *   rejected with ImmutableFieldChanged and the previous version stays in
 *   effect; any other rejected edit also keeps the previous version in
 *   effect. Deleting the object frees the metric name.
 */
#ifndef MM_POLICY_CONTRACT_H
#define MM_POLICY_CONTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/contract/cluster_id.h"
#include "policy/contract/conditions.h"
#include "policy/contract/crd_definition.h"
#include "policy/contract/crd_policy.h"

struct manifest_source;
struct contract;

struct contract *contract__new(void);
void contract__free(struct contract *c);

/*
 * (Re)build the registry from the source's current snapshot; call after
 * manifest_source__reload() returned 1. Returns 0 or -ENOMEM.
 */
int contract__load(struct contract *c, const struct manifest_source *src);
/*
 * The CustomResourceDefinitions installed in a cluster, for the schemas of
 * policies' subjects the manifests hold no CRD for (`check --kubeconfig`).
 * Borrowed: it must outlive the next contract__load(). NULL: none.
 */
void contract__set_schemas(struct contract *c,
			   const struct manifest_source *crds);
/* Bumps on every load; the engine rebuilds when it moves. */
uint64_t contract__generation(struct contract *c);

/*
 * The definitions and policies in effect, each with a reference the caller
 * drops with crd_*__put() and the array freed with free().
 */
int contract__active_defs(struct contract *c, struct metric_def ***out,
			  size_t *n);
int contract__active_policies(struct contract *c, struct metric_policy ***out,
			      size_t *n);
/* The definition in effect for a metric name, with a reference, or NULL. */
struct metric_def *contract__find_def(struct contract *c, const char *metric);
void contract__cluster(struct contract *c, struct cluster_identity *out);

/* The engine's run-time verdict on a policy (by object name). */
void contract__set_programmed(struct contract *c, const char *policy, bool ok,
			      const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* Any other condition of an active policy (Translated: the controller). */
void contract__set_policy_condition(struct contract *c, const char *policy,
				    const char *type, bool ok,
				    const char *reason, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* Look at one object's conditions (copied out); -ENOENT when unknown. */
int contract__conditions(struct contract *c, const char *kind, const char *name,
			 struct cond_set *out);

/*
 * Objects rejected (Accepted or ResolvedRefs False, for an HTTPRoute also
 * PartiallyInvalid True, on the object or any of its parentRefs) plus
 * manifest errors. Warnings are not rejections.
 */
size_t contract__rejected(struct contract *c);

/* A route's status towards one of its parentRefs (Gateway API parents[]). */
struct contract_parent {
	char ref[192]; /* "Gateway infra/gw sectionName http" */
	struct cond_set conds;
};

/*
 * An object the contract does not own but `milometer check` validates
 * (Gateway, HTTPRoute, Namespace): shown with file:line and its conditions
 * among the contract's objects, in file order, and counted by rejected().
 * Strings are copied. The next contract__load() forgets it.
 */
struct contract_object {
	const char *kind, *ns, *name, *file;
	uint32_t line;
	struct cond_set conds;
	const struct contract_parent *parents;
	size_t nparents;
	const char *const *warnings; /* "file:line: what may be wrong" */
	size_t nwarnings;
};
int contract__add_object(struct contract *c, const struct contract_object *o);
/* A note on the run, not on one object ("x.md: skipped: ..."). */
int contract__add_skipped(struct contract *c, const char *what);

#define CONTRACT_RENDER_JSON (1u << 0)
/*
 * The live view for `milometer check` and `milometer ctl policies`: every
 * object with file:line and conditions, manifest errors, cluster identity.
 */
int contract__render(struct contract *c, FILE *out, unsigned flags);

/* For self-metrics: one call per (kind, type, status, reason) present. */
typedef void (*contract_count_fn)(void *ctx, const char *kind, const char *type,
				  const char *status, const char *reason,
				  uint64_t n);
void contract__condition_counts(struct contract *c, contract_count_fn fn,
				void *ctx);

#endif /* MM_POLICY_CONTRACT_H */
