/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to policy/contract/policy_engine*.c: the compiled state shared
 * by the rebuild (policy_engine.c), the data plane bindings
 * (policy_engine_bind.c) and the resource-field collection
 * (policy_engine_fields.c).
 */
#ifndef MM_POLICY_CONTRACT_POLICY_ENGINE_IMPL_H
#define MM_POLICY_CONTRACT_POLICY_ENGINE_IMPL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "policy/cel/cel.h"
#include "policy/contract/contract.h"
#include "policy/contract/policy_engine.h"
#include "policy/source/doc.h"

#define LABEL_VALUE_MAX 256

/* Per policy name, for the engine's lifetime: survives rebuilds. */
struct pe_counters {
	char *name;
	uint64_t bindings, unmatched, records, eval_errors, label_errors,
		dropped, series, ambiguous;
	struct pe_counters *next;
};

#define COUNT(c, field) __atomic_add_fetch(&(c)->field, 1, __ATOMIC_RELAXED)

/* Subject objects, cloned and completed (uid, namespace). */
struct pe_world {
	int refs;
	struct doc_node **objs;
	size_t n;
};

struct pe_entry {
	char *key; /* selector values joined by \x1f; NULL: empty slot */
	const struct doc_node *obj;
};

struct pe_policy {
	int refs;
	struct metric_policy *pol;
	struct metric_def *def;
	struct pe_world *world;
	struct pe_counters *cnt;
	int metric_id;
	bool affine; /* also true for a pass-through value */
	double a, b;
	double f0; /* f(0): baseline of cumulative sums */
	const struct doc_node **subjects;
	size_t nsubjects;
	struct pe_entry *tab; /* DataPlane index, power-of-two size */
	size_t cap;
	bool programmed;
};

struct pe_metric {
	char *name;
	int id;
	bool used;
};

struct policy_engine {
	pthread_mutex_t lock;
	struct mstore *store;
	struct contract *contract;
	struct pe_policy **pols;
	size_t npols;
	uint64_t generation, contract_gen, src_gen;
	bool synced;
	struct pe_counters *counters;
	struct pe_metric *metrics;
	size_t nmetrics;
};

struct pe_target {
	struct pe_policy *pp;
	struct mseries *ser;
	const struct doc_node *resource;
	double total; /* source running total (cumulative sums) */
	double last;  /* f(total) already added */
};

struct pe_binding {
	struct mstore *store;
	uint64_t generation;
	struct cel_attr *attrs; /* copies: the value transform may read them */
	size_t nattrs;
	char *strings;
	size_t n;
	struct pe_target t[];
};

/* Drop a reference to compiled policy state (freed with the last). */
void pe_impl__pp_put(struct pe_policy *pp);
/* The DataPlane index key of a binding's attributes; false when one is missing.
 */
bool pe_impl__attrs_key(const struct metric_policy *p,
			const struct cel_attr *attrs, size_t n, char *buf,
			size_t len);
/* The subject a DataPlane key selects, NULL when none. */
const struct doc_node *pe_impl__index_find(const struct pe_policy *pp,
					   const char *key);
/* Evaluate the policy's label expressions into strings. */
int pe_impl__eval_labels(struct pe_policy *pp, const struct cel_activation *act,
			 struct mlabel *out, char (*vals)[LABEL_VALUE_MAX],
			 size_t *n);
/* Evaluate a value expression to a finite double. */
int pe_impl__eval_double(struct cel_program *prog,
			 const struct cel_activation *act, double *out);
/*
 * The subject (mstore__bind) a series made from obj is bound to: obj's
 * group, resource, namespace and name. False when it does not fit.
 */
bool pe_impl__subject(const struct metric_policy *p, const struct doc_node *obj,
		      char *buf, size_t len);
/* The resource kind a policy's subjects are, for messages. */
const char *pe_impl__kind_label(const struct metric_policy *p);

#endif /* MM_POLICY_CONTRACT_POLICY_ENGINE_IMPL_H */
