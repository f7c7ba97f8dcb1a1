/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What every translation target needs to know about one accepted
 * MetricPolicy, worked out once with the policy engine's own evaluation:
 * the value transform as a*value+b, each label as a constant, a copy of one
 * source attribute, or a per-subject value (evaluated here on every subject
 * object, so any CEL over `resource` translates), and the subjects with
 * their selector values as policy_engine__bind() would find them.
 *
 * A policy a target cannot compute exactly gets a reason instead
 * ("NotTranslatable: ..."); never an approximation.
 */
#ifndef MM_POLICY_TRANSLATE_PLAN_H
#define MM_POLICY_TRANSLATE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/contract/contract.h"
#include "policy/source/source_catalogue.h"

struct policy_engine;

enum tr_label_kind {
	TL_CONST,    /* same value on every series (constant CEL, static) */
	TL_ATTR,     /* attributes['key'] copied */
	TL_RESOURCE, /* evaluated per subject object */
	TL_ITEM,     /* ResourceFields: reads item (with or without resource) */
};

struct tr_label {
	char *key;
	enum tr_label_kind kind;
	bool required;
	char *attr;               /* TL_ATTR: the attribute key */
	char *value;              /* TL_CONST: the value; NULL: left out */
	struct cel_program *prog; /* the expression (owned by the policy) */
};

struct tr_subject {
	char **sels;   /* selector values, attributeSelectors order */
	char **values; /* per label (TL_RESOURCE only), NULL: left out */
	const struct doc_node *obj;
};

#define TR_REASON_MAX 512

struct tr_plan {
	struct metric_policy *pol;
	struct metric_def *def;
	const struct source_metric *src; /* DataPlane: the agent's source */
	double a, b;                     /* value = a * source + b */
	struct tr_label *labels;
	size_t nlabels;
	struct tr_subject *subjects;
	size_t nsubjects;
	/* "" or why no target can compute this policy's series exactly */
	char reason[TR_REASON_MAX];
};

/*
 * Plans for the contract's active policies (sorted by name; all of them
 * when names is empty, else those named, -ENOENT naming a missing one in
 * err). The engine must have been synced with the same contract.
 */
int plan__build(struct contract *c, struct policy_engine *e,
		const char *const *names, size_t nnames, struct tr_plan **out,
		size_t *n, char *err, size_t errlen);
void plan__free(struct tr_plan *p, size_t n);

#endif /* MM_POLICY_TRANSLATE_PLAN_H */
