/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The policy engine: applies the accepted MetricPolicies of a contract to
 * the metric store.
 *
 * DataPlane. The agent's data path writes Envoy-named source metrics
 * (envoy.cluster.upstream_rq_time ...) into the store. When it creates a
 * new source series it asks policy_engine__bind() which target series that
 * series feeds: policies whose selector.otel.metricName is the source name,
 * whose attributeFilters pass, and whose attributeSelectors find a subject
 * object (an index over valueFrom(resource) keys: one hash lookup, no scan).
 * Target labels are evaluated once, at bind time (they depend only on
 * attributes and resource). Then for every request event the agent calls
 * pe_binding__record(value): no lookup, no allocation; an affine value
 * transform (value / 1000.0) is folded into a*v+b, anything else is one
 * cel__eval() per event.
 *
 * Value semantics per target instrument:
 *   Histogram      observe(f(v)) per event (v: one observation)
 *   Gauge          set(f(v))
 *   Counter, UpDownCounter
 *     selector temporality cumulative (default; Envoy counters are
 *     cumulative): `value` in the policy is the source's running total T,
 *     the target total is f(T) - f(0) summed over the source series that
 *     feed it. The agent passes increments; the engine keeps T per binding
 *     and adds f(T + v) - f(T). For linear f this is a * v; for a
 *     non-linear f it is still exactly f of the cumulative count.
 *     selector temporality delta: `value` is one increment, add f(v).
 *     A Counter increment < 0 (non-monotonic f) is dropped and counted.
 * The target's temporality is the MetricDefinition's
 * aggregationTemporality (default cumulative); the store produces the
 * delta or cumulative view from it.
 *
 * Errors never crash and are counted per policy (policy_engine__stats):
 * a value transform error drops that event; a label that fails to
 * evaluate or is null is left out when the definition marks it optional,
 * and the binding for that policy is not made when it is required (the
 * sample is not exported under the target name, nothing else changes).
 *
 * ResourceFields. policy_engine__collect_resource_fields() (the agent calls
 * it before each collection) evaluates seriesFrom.path on every subject
 * object: a list gives one series per element (item = element), any other
 * value one series with item = that value, a missing or null path none.
 * dropIf (resource, item) true skips the series. Values are set (gauges,
 * or cumulative totals for sums); staticLabels are added. A series whose
 * object or item disappeared is simply no longer set: it leaves the export
 * when the store's idle expiry drops it, so run the store with
 * mstore_opts.idle_expiry_ns of a few collection intervals.
 *
 * Subject objects are cloned from the manifest source when the engine
 * rebuilds; missing metadata.uid gets a derived UUIDv5 (contract_uid.h)
 * and missing metadata.namespace "default" (unless subject scope is
 * Cluster), as the API server would have set them.
 *
 * Invalidation: policy_engine__sync() rebuilds when the contract or the
 * source changed and bumps policy_engine__generation(). Existing bindings
 * stay safe to use (they hold references) but are stale: the agent compares
 * pe_binding__generation() with the engine's and binds again.
 *
 * Threads: bind, record, binding free: store lock held (mstore__lock), one
 * thread (CEL programs keep scratch state), the same thread that calls
 * sync. collect_resource_fields may run on another thread (it only uses
 * ResourceFields programs). Lock order is store, then engine: sync and
 * collect take both themselves (the store lock is recursive, so calling
 * them with it held is fine), bind takes the engine lock under the
 * caller's store lock.
 */
#ifndef MM_POLICY_POLICY_ENGINE_H
#define MM_POLICY_POLICY_ENGINE_H

#include <stddef.h>
#include <stdint.h>

#include "policy/model/metric_store.h"
#include "policy/cel/cel.h"

struct contract;
struct manifest_source;
struct policy_engine;
struct pe_binding;

struct policy_engine *policy_engine__new(struct mstore *store,
					 struct contract *contract);
/* Free every binding first. */
void policy_engine__free(struct policy_engine *e);
/* The store the engine's targets live in (whose lock guards bindings). */
struct mstore *policy_engine__store(struct policy_engine *e);

/*
 * Rebuild from the contract's active policies and the source's subject
 * objects when either changed. 1 rebuilt, 0 nothing to do, -errno.
 */
int policy_engine__sync(struct policy_engine *e,
			const struct manifest_source *src);
uint64_t policy_engine__generation(struct policy_engine *e);

/*
 * Bindings of a new source series. Returns the number of target series
 * (0: not exported under any target name; *out NULL) or -ENOMEM.
 */
int policy_engine__bind(struct policy_engine *e, const char *source_metric,
			const struct cel_attr *attrs, size_t nattrs,
			struct pe_binding **out);
void pe_binding__record(struct pe_binding *b, double value, uint64_t now_ns);
uint64_t pe_binding__generation(const struct pe_binding *b);
size_t pe_binding__targets(const struct pe_binding *b);
void pe_binding__free(struct pe_binding *b);

/* Evaluate every ResourceFields policy into the store. Returns series set. */
int policy_engine__collect_resource_fields(struct policy_engine *e,
					   uint64_t now_ns);

/*
 * For translators: the subjects a DataPlane policy binds samples to, as
 * policy_engine__bind() finds them (the first object wins among equal
 * selector values); for a ResourceFields policy every subject object. fn gets each subject's selector values, in
 * attributeSelectors order, and the completed object (uid, namespace).
 * Returns how many, -ENOENT when the policy is not in effect, or fn's
 * negative return. Not concurrently with policy_engine__sync().
 */
struct doc_node;
typedef int (*pe_subject_fn)(void *ctx, const char *const *sel_values,
			     size_t nsels, const struct doc_node *resource);
int policy_engine__each_subject(struct policy_engine *e, const char *policy,
				pe_subject_fn fn, void *ctx);

/*
 * A label expression's result as the label value the engine exports: 0, or
 * 1 when null (the label is left out), or -errno.
 */
int policy_engine__label_string(const struct cel_value *v, char *buf,
				size_t len);

struct pe_stats {
	const char *policy;
	uint64_t bindings;     /* target series bound */
	uint64_t unmatched;    /* source series with no subject object */
	uint64_t records;      /* events recorded */
	uint64_t eval_errors;  /* value/dropIf/selector evaluations failed */
	uint64_t label_errors; /* labels left out or bindings refused */
	uint64_t dropped;      /* events or series dropped (errors, dropIf) */
	uint64_t series;       /* ResourceFields series set at last collect */
	uint64_t ambiguous;    /* subjects whose selector values repeat an
				* earlier object's (the first one wins) */
};
typedef void (*pe_stats_fn)(void *ctx, const struct pe_stats *st);
void policy_engine__stats(struct policy_engine *e, pe_stats_fn fn, void *ctx);

#endif /* MM_POLICY_POLICY_ENGINE_H */
