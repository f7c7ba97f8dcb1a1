// SPDX-License-Identifier: Apache-2.0
/* Cluster identity from ClusterProperty objects: see cluster_id.h. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/contract/cluster_id.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

static bool dns_label(const char *s, size_t len)
{
	if (!len || len > 63)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = s[i];

		if (!(islower(c) || isdigit(c) || c == '-'))
			return false;
	}
	return s[0] != '-' && s[len - 1] != '-';
}

bool cluster_id__valid_id(const char *s)
{
	return s && dns_label(s, strlen(s));
}

bool cluster_id__valid_clusterset(const char *s)
{
	size_t len = s ? strlen(s) : 0;
	const char *p = s, *dot;

	if (!len || len > 253)
		return false;
	for (;;) {
		dot = strchr(p, '.');
		if (!dns_label(p, dot ? (size_t)(dot - p) : strlen(p)))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

bool cluster_id__is_property(const struct mobject *o)
{
	size_t glen = strlen(CLUSTER_PROPERTY_GROUP);

	return !strcmp(o->kind, CLUSTER_PROPERTY_KIND) &&
	       !strncmp(o->api_version, CLUSTER_PROPERTY_GROUP, glen) &&
	       o->api_version[glen] == '/' && o->name &&
	       (!strcmp(o->name, CLUSTER_ID_PROPERTY) ||
		!strcmp(o->name, CLUSTERSET_PROPERTY));
}

int cluster_id__check_property(const struct mobject *o, struct crd_err *e)
{
	const struct doc_node *v = doc__path(o->root, "spec.value");
	bool is_id = !strcmp(o->name, CLUSTER_ID_PROPERTY);

	if (!v || v->kind != DOC_STRING)
		return crd__fail(e, "InvalidField", v ? v : o->root,
				 "spec.value", "must be a string (%s)",
				 v ? doc__kind_name(v->kind) : "missing");
	if (is_id && !cluster_id__valid_id(v->str.s))
		return crd__fail(
			e, "InvalidClusterID", v, "spec.value",
			"cluster id \"%.80s\" is not an RFC 1123 DNS label (at most 63 of [a-z0-9-], starting and ending alphanumeric); not attached to exported data",
			v->str.s);
	if (!is_id && !cluster_id__valid_clusterset(v->str.s))
		return crd__fail(
			e, "InvalidClusterSet", v, "spec.value",
			"ClusterSet \"%.80s\" is not an RFC 1123 subdomain; not attached to exported data",
			v->str.s);
	return 0;
}

void cluster_id__read(const struct manifest_source *src,
		      struct cluster_identity *out)
{
	const struct mobject *o = NULL;
	struct crd_err e = { 0 };

	memset(out, 0, sizeof(*out));
	while ((o = manifest_source__next(src, CLUSTER_PROPERTY_KIND, o))) {
		bool is_id;
		char *dst;
		size_t cap;

		if (!cluster_id__is_property(o))
			continue;
		is_id = !strcmp(o->name, CLUSTER_ID_PROPERTY);
		dst = is_id ? out->id : out->clusterset;
		cap = is_id ? sizeof(out->id) : sizeof(out->clusterset);
		if (dst[0])
			continue; /* first valid one wins */
		if (cluster_id__check_property(o, &e)) {
			if (is_id)
				out->id_invalid = true;
			else
				out->clusterset_invalid = true;
			snprintf(out->problem, sizeof(out->problem), "%s",
				 e.msg);
			continue;
		}
		snprintf(dst, cap, "%s", doc__str(o->root, "spec.value"));
		if (is_id)
			out->id_invalid = false;
		else
			out->clusterset_invalid = false;
	}
}

size_t cluster_id__attrs(const struct cluster_identity *ci,
			 struct mlabel out[2])
{
	size_t n = 0;

	if (ci->id[0])
		out[n++] = (struct mlabel){ CLUSTER_ID_ATTR, ci->id };
	if (ci->clusterset[0])
		out[n++] = (struct mlabel){ CLUSTERSET_ATTR, ci->clusterset };
	return n;
}
