/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Source profiles: how the data-plane source metrics look on the wire of a
 * scrape, so a translation selects and relabels the right series.
 *
 *   milometer  the agent's /metrics: Prometheus names from the OTel names
 *              (envoy_cluster_upstream_rq_total, ..._time_bucket), one
 *              label per source attribute (k8s_httproute_name, ...), `le`
 *              as the agent prints it.
 *   envoy      a real Envoy (as Envoy Gateway configures it): the same
 *              family names, the only label envoy_cluster_name, clusters
 *              named httproute/NS/NAME/rule/N (route name and namespace are
 *              derived from it), `le` printed "%.32g" ("0.5", "3600000").
 *              Downstream stats are per listener there, not per route.
 */
#ifndef MM_POLICY_TRANSLATE_PROFILE_H
#define MM_POLICY_TRANSLATE_PROFILE_H

#include <stdbool.h>
#include <stddef.h>

#include "exporter/prom_text.h"
#include "policy/source/source_catalogue.h"

/* One source attribute as a Prometheus label. */
struct tr_attr {
	const char *attr;  /* OTel key */
	const char *label; /* Prometheus label after derivation */
	/* derived: group `group` of `from`'s value matched by the profile's
	 * cluster pattern; NULL: the label is on the series as scraped */
	const char *from;
	int group;
};

struct tr_profile {
	const char *name;
	const struct tr_attr *attrs;
	size_t nattrs;
	/*
	 * The pattern derived attributes come from, with %1, %2 for their
	 * groups (anchored as PromQL anchors every regex).
	 */
	const char *pattern;
	bool envoy_le; /* `le` printed as Envoy does */
};

/* The profile of that name, or NULL. */
const struct tr_profile *profile__find(const char *name);
/* How a source attribute appears, or NULL when the profile lacks it. */
const struct tr_attr *profile__attr(const struct tr_profile *p,
				    const char *attr);
/* Why this profile cannot attribute a source to a route, or NULL. */
const char *profile__refuse(const struct tr_profile *p,
			    const struct source_metric *s);
/* The Prometheus family name of a source (no _bucket/_sum/_count). */
int profile__family(const struct source_metric *s, char *out, size_t len);
/* A histogram bound as the source prints `le` in that format. */
void profile__le(const struct tr_profile *p, double bound, enum prom_format fmt,
		 char *buf, size_t len);

#endif /* MM_POLICY_TRANSLATE_PROFILE_H */
