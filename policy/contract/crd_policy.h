/* SPDX-License-Identifier: Apache-2.0 */
/*
 * MetricPolicy (telemetry.miloapis.com/v1alpha1): how one metric is
 * produced, from control-plane fields (ResourceFields) or data-plane samples
 * (DataPlane). Every CEL expression is compiled here, so a policy that is
 * accepted never fails to compile later; a compile error rejects the policy
 * with reason InvalidCEL naming the field, the expression, the column and
 * the message.
 *
 * Variables each expression may use:
 *   DataPlane  attributeSelectors[].valueFrom        resource
 *              transform.value.cel                   value, attributes, resource
 *              transform.labels.*                    attributes, resource
 *   ResourceFields seriesFrom.value.cel, .labels.*   resource, item
 *              dropIf.cel                            resource, item
 * Labels may not use `value`: a label per sample value would explode the
 * series count, and it lets a binding compute its labels once.
 *
 * subject accepts {group, version, kind}, {group, version, resource} and
 * {apiGroup, resource, scope}; resource may be a Kind ("HTTPRoute") or a
 * plural ("httproutes"). seriesFrom.path is "resource" or
 * "resource.<dotted.path>".
 */
#ifndef MM_POLICY_CRD_POLICY_H
#define MM_POLICY_CRD_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "policy/model/metric_store.h"
#include "policy/regex/regex.h"
#include "policy/contract/crd_fields.h"

struct mobject;
struct cel_program;

enum mp_source_type {
	MP_RESOURCE_FIELDS,
	MP_DATA_PLANE,
};

struct mp_expr {
	char *src; /* NULL when the field is absent */
	struct cel_program *prog;
	uint32_t line;
};

struct mp_label {
	char *key;
	struct mp_expr e;
};

struct mp_selector {
	char *key; /* sample attribute */
	uint32_t key_line;
	struct mp_expr e; /* valueFrom over resource */
};

struct mp_filter {
	char *key;
	uint32_t key_line;
	char *prefix;            /* one of prefix / regex */
	struct regex *re;        /* RE2, matches anywhere in the value */
	char *re_src;            /* the pattern as written (translators) */
#define MP_MAX_FILTER_REGEXES 64 /* per policy: see policy/regex/regex.h */
};

struct metric_policy {
	int refs;
	char *obj_name;
	char *file;
	uint32_t line;
	char *created;
	char *subj_group;   /* "" for core */
	char *subj_version; /* NULL: any */
	char *subj_kind;    /* kind or resource as written */
	bool subj_cluster;  /* scope: Cluster (no namespace defaulting) */
	char *target;       /* spec.targetMetric.name */
	enum mp_source_type type;

	/* DataPlane */
	char *src_metric;
	uint32_t src_metric_line;
	enum mtemporality src_temporality; /* default cumulative */
	struct mp_selector *sels;
	size_t nsels;
	struct mp_filter *filters;
	size_t nfilters;
	struct mp_expr value; /* prog NULL: pass-through */

	/* ResourceFields */
	char *series_path; /* below resource, "" for resource itself */
	uint32_t series_path_line;
	struct mp_expr rf_value;
	struct mp_expr drop_if;
	char **static_keys, **static_vals;
	size_t nstatic;

	/* both: transform.labels / seriesFrom.labels, in document order */
	struct mp_label *labels;
	size_t nlabels;
};

int crd_policy__parse(const struct mobject *o, struct metric_policy **out,
		      struct crd_err *e);
struct metric_policy *crd_policy__get(struct metric_policy *p);
void crd_policy__put(struct metric_policy *p);

/* Does this policy's subject name objects of this group and kind? */
bool crd_policy__subject_matches(const struct metric_policy *p,
				 const char *api_version, const char *kind);
/* Whether the policy would produce this label key (labels or static). */
bool crd_policy__produces(const struct metric_policy *p, const char *key);

#endif /* MM_POLICY_CRD_POLICY_H */
