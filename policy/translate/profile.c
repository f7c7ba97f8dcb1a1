// SPDX-License-Identifier: Apache-2.0
/* Source profiles: see profile.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "exporter/prom_names.h"
#include "policy/translate/profile.h"

static const struct tr_attr milometer_attrs[] = {
	{ "k8s.httproute.name", "k8s_httproute_name", NULL, 0 },
	{ "k8s.namespace.name", "k8s_namespace_name", NULL, 0 },
	{ "k8s.gateway.name", "k8s_gateway_name", NULL, 0 },
	{ "envoy.cluster_name", "envoy_cluster_name", NULL, 0 },
	{ "http.request.method", "http_request_method", NULL, 0 },
	{ "http.response.status_code", "http_response_status_code", NULL, 0 },
	{ "http.response.status_code_class", "http_response_status_code_class",
	  NULL, 0 },
	{ "milometer.aborted", "milometer_aborted", NULL, 0 },
	{ "rpc.grpc.status_code", "rpc_grpc_status_code", NULL, 0 },
};

/* Envoy Gateway names a route rule's cluster httproute/NS/NAME/rule/N. */
static const struct tr_attr envoy_attrs[] = {
	{ "envoy.cluster_name", "envoy_cluster_name", NULL, 0 },
	{ "k8s.namespace.name", "k8s_namespace_name", "envoy_cluster_name", 1 },
	{ "k8s.httproute.name", "k8s_httproute_name", "envoy_cluster_name", 2 },
};

static const struct tr_profile profiles[] = {
	{ "milometer", milometer_attrs,
	  sizeof(milometer_attrs) / sizeof(milometer_attrs[0]), NULL, false },
	{ "envoy", envoy_attrs, sizeof(envoy_attrs) / sizeof(envoy_attrs[0]),
	  "httproute/%1/%2/rule/[0-9]+", true },
};

_Static_assert(sizeof(milometer_attrs) / sizeof(milometer_attrs[0]) == 9,
	       "one label per attribute of the source catalogue");

const struct tr_profile *profile__find(const char *name)
{
	for (size_t i = 0; i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (!strcmp(profiles[i].name, name))
			return &profiles[i];
	return NULL;
}

const struct tr_attr *profile__attr(const struct tr_profile *p,
				    const char *attr)
{
	for (size_t i = 0; i < p->nattrs; i++)
		if (!strcmp(p->attrs[i].attr, attr))
			return &p->attrs[i];
	return NULL;
}

const char *profile__refuse(const struct tr_profile *p,
			    const struct source_metric *s)
{
	if (p->envoy_le && !strncmp(s->name, "envoy.http.downstream_", 22))
		return "Envoy's downstream stats (envoy_http_downstream_rq_*) are per HTTP connection manager, not per route: no series carries the HTTPRoute";
	return NULL;
}

int profile__family(const struct source_metric *s, char *out, size_t len)
{
	struct mmetric_desc d = {
		.name = s->name,
		.unit = s->unit,
		.instrument = s->instrument,
	};
	char full[512];
	int n = prom_names__metric(&d, full, sizeof(full));

	if (n < 0)
		return n;
	return snprintf(out, len, "%s", full) >= (int)len ? -ENOSPC : n;
}

void profile__le(const struct tr_profile *p, double bound, enum prom_format fmt,
		 char *buf, size_t len)
{
	/* Envoy: fmt::format("{0:.32g}", bucket) in its stats handler */
	if (p->envoy_le)
		snprintf(buf, len, "%.32g", bound);
	else
		prom_text__format_double(buf, len, bound, fmt);
}
