// SPDX-License-Identifier: Apache-2.0
/* The tenant of a series' object for --otlp-tenant-from: see tenants.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/k8s/api_source.h"
#include "agent/k8s/store.h"
#include "agent/tenants.h"
#include "policy/model/metric_store.h"

/*
 * --otlp-tenant-from: the tenant of a series' object is its namespace, or
 * a label of its Namespace (read from the API's Namespace watch, refreshed
 * before each export).
 */
struct ns_tenant {
	char ns[254];
	char tenant[256];
};
struct tenants {
	const char *label; /* NULL: the namespace is the tenant */
	struct ns_tenant *v;
	size_t n, cap;
};

static int ns_label_visit(struct json_object *obj, void *ctx)
{
	struct tenants *t = ctx;
	const char *key = t->label;
	struct json_object *md, *name, *labels, *v;
	struct ns_tenant *nt;

	if (!json_object_object_get_ex(obj, "metadata", &md) ||
	    !json_object_object_get_ex(md, "name", &name) ||
	    !json_object_object_get_ex(md, "labels", &labels) ||
	    !json_object_object_get_ex(labels, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return 0;
	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct ns_tenant *nv = realloc(t->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		t->v = nv;
		t->cap = cap;
	}
	nt = &t->v[t->n++];
	snprintf(nt->ns, sizeof(nt->ns), "%s", json_object_get_string(name));
	snprintf(nt->tenant, sizeof(nt->tenant), "%s",
		 json_object_get_string(v));
	return 0;
}

const char *tenants__label(const char *from)
{
	return from && !strncmp(from, "namespace-label:", 16) ? from + 16
							      : NULL;
}

struct tenants *tenants__new(const char *from)
{
	struct tenants *t = calloc(1, sizeof(*t));

	if (t)
		t->label = tenants__label(from);
	return t;
}

void tenants__free(struct tenants *t)
{
	if (!t)
		return;
	free(t->v);
	free(t);
}

void tenants__refresh(struct tenants *t, struct k8s_api *api)
{
	struct k8s_store *nss =
		t->label && api ? k8s_api__store(api, "namespaces") : NULL;

	t->n = 0;
	if (nss)
		k8s_store__foreach(nss, ns_label_visit, t);
}

bool tenants__of_subject(void *ctx, const char *subject, char *buf, size_t len)
{
	struct tenants *t = ctx;
	struct msubject s;
	char tmp[1024];

	if (!msubject__parse(subject, &s, tmp, sizeof(tmp)) || !s.ns[0])
		return false;
	if (!t->label) {
		snprintf(buf, len, "%s", s.ns);
		return true;
	}
	for (size_t i = 0; i < t->n; i++) {
		if (!strcmp(t->v[i].ns, s.ns)) {
			snprintf(buf, len, "%s", t->v[i].tenant);
			return true;
		}
	}
	return false;
}
