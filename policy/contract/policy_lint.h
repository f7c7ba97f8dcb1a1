/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a MetricPolicy means, checked against what exists: a policy that
 * parses and compiles may still name things nothing provides, and then it
 * silently produces nothing. Checked here:
 *
 *   - CEL paths into the subject (resource.x.y, item.x, has(...)) and
 *     seriesFrom.path against the subject kind's schema: the Gateway API's
 *     Gateway and HTTPRoute (v1), core Namespace, and the contract's own
 *     MetricDefinition and MetricPolicy are known (compact schemas in
 *     policy_lint.c, from the types' Go definitions); another kind by the
 *     openAPIV3Schema of its CustomResourceDefinition (a served version):
 *     the manifests' (src) first, as they are what gets applied, else the
 *     one installed in the cluster (crds, when `check` reads a cluster).
 *     The API server prunes what a structural schema does not have, so
 *     naming such a field is an error;
 *   - attribute keys (attributeSelectors[].key, attributeFilters[].key,
 *     attributes['...'] in CEL) against the attributes the source metric
 *     carries (policy/source/source_catalogue.h);
 *   - the source metric name against the source catalogue.
 *
 * Certainly wrong is an error (Accepted=False): a name one typo away from
 * a known one ("did you mean `resource.metadata.namespace`?"), a field of
 * ObjectMeta that does not exist, a selection into a scalar or a list.
 * Possibly right later is a warning: a field no known schema has but an
 * extension may add (the seed's `resource.status.conditions` on HTTPRoute,
 * which the Gateway API keeps under status.parents[]), a subject kind whose
 * schema is unknown, a source metric or attribute unlike any milometer
 * produces (another data plane may).
 */
#ifndef MM_POLICY_POLICY_LINT_H
#define MM_POLICY_POLICY_LINT_H

#include <stddef.h>

#include "policy/contract/crd_fields.h"

struct manifest_source;
struct metric_policy;

typedef void (*policy_lint_warn_fn)(void *ctx, const char *msg);

/*
 * 0, or -EINVAL with e filled (reasons InvalidCEL, UnknownAttribute,
 * UnknownSourceMetric, InvalidField); each warning ("file:line: ...") goes
 * to warn.
 */
int policy_lint__check(const struct metric_policy *p,
		       const struct manifest_source *src,
		       const struct manifest_source *crds, struct crd_err *e,
		       policy_lint_warn_fn warn, void *ctx);
/* Which schema policy_lint__check() holds p's subject to, in words. */
void policy_lint__schema(const struct metric_policy *p,
			 const struct manifest_source *src,
			 const struct manifest_source *crds, char *buf,
			 size_t len);

#endif /* MM_POLICY_POLICY_LINT_H */
