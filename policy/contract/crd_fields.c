// SPDX-License-Identifier: Apache-2.0
/* Strict CRD field reading: see crd_fields.h. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "policy/contract/crd_fields.h"
#include "policy/source/doc_field.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

int crd__fail(struct crd_err *e, const char *reason, const struct doc_node *at,
	      const char *path, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	snprintf(e->reason, sizeof(e->reason), "%s", reason);
	if (!at || !at->file)
		at = e->obj; /* a missing field: say which object lacks it */
	if (at && at->file)
		n = snprintf(e->msg, sizeof(e->msg), "%s:%u: ", at->file,
			     at->line);
	if (n < 0 || (size_t)n >= sizeof(e->msg))
		n = 0;
	if (path && *path) {
		int m = snprintf(e->msg + n, sizeof(e->msg) - n, "%s: ", path);

		if (m > 0 && (size_t)(n + m) < sizeof(e->msg))
			n += m;
	}
	va_start(ap, fmt);
	vsnprintf(e->msg + n, sizeof(e->msg) - n, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int crd__check_map(const struct doc_node *n, const char *path,
		   const char *const *allowed, struct crd_err *e)
{
	if (!n || n->kind != DOC_MAP)
		return crd__fail(e, "InvalidField", n, path,
				 "expected an object, found %s",
				 n ? doc__kind_name(n->kind) : "nothing");
	for (size_t i = 0; i < n->map.n; i++) {
		const char *const *a = allowed;

		while (*a && strcmp(*a, n->map.keys[i]))
			a++;
		if (!*a)
			return crd__fail(
				e, "UnknownField", n->map.vals[i], path,
				"unknown field \"%s\" (strict decoding rejects it; check the spelling against deploy/kubernetes/crds/)",
				n->map.keys[i]);
	}
	return 0;
}

const char *crd__req_str(const struct doc_node *map, const char *key,
			 const char *path, struct crd_err *e)
{
	const struct doc_node *v = doc__get(map, key);

	if (!v) {
		crd__fail(e, "InvalidField", map, path,
			  "required field \"%s\" is missing", key);
		return NULL;
	}
	if (v->kind != DOC_STRING || !v->str.len) {
		crd__fail(e, "InvalidField", v, path,
			  "field \"%s\" must be a non-empty string, found %s",
			  key,
			  v->kind == DOC_STRING ? "\"\""
						: doc__kind_name(v->kind));
		return NULL;
	}
	if (strlen(v->str.s) != v->str.len) {
		crd__fail(e, "InvalidField", v, path,
			  "field \"%s\" contains a NUL byte", key);
		return NULL;
	}
	return v->str.s;
}

int crd__opt_str(const struct doc_node *map, const char *key, const char *path,
		 const char **out, struct crd_err *e)
{
	const struct doc_node *v;
	int r = doc_field__get(map, key, DOC_STRING, &v);

	*out = r > 0 ? v->str.s : NULL;
	if (r < 0)
		return crd__fail(e, "InvalidField", v, path,
				 "field \"%s\" must be %s, found %s", key,
				 doc_field__want(DOC_STRING),
				 doc__kind_name(v->kind));
	/* "\0" in YAML: C would see a shorter, different value */
	if (r > 0 && strlen(v->str.s) != v->str.len) {
		*out = NULL;
		return crd__fail(e, "InvalidField", v, path,
				 "field \"%s\" contains a NUL byte", key);
	}
	return 0;
}

int crd__opt_bool(const struct doc_node *map, const char *key, const char *path,
		  bool def, bool *out, struct crd_err *e)
{
	const struct doc_node *v;
	int r = doc_field__get(map, key, DOC_BOOL, &v);

	*out = r > 0 ? v->b : def;
	if (r < 0)
		return crd__fail(e, "InvalidField", v, path,
				 "field \"%s\" must be %s, found %s", key,
				 doc_field__want(DOC_BOOL),
				 doc__kind_name(v->kind));
	return 0;
}

/* RFC 1123 subdomain, as Kubernetes object names are. */
static bool dns_subdomain(const char *s)
{
	size_t len = strlen(s);

	if (!len || len > 253)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (!(islower((unsigned char)c) || isdigit((unsigned char)c) ||
		      c == '-' || c == '.'))
			return false;
		if ((c == '-' || c == '.') && (i == 0 || i == len - 1))
			return false;
	}
	return true;
}

int crd__check_object(const struct mobject *o, struct crd_err *e)
{
	static const char *const top[] = { "apiVersion", "kind",   "metadata",
					   "spec",       "status", NULL };
	static const char *const meta[] = { "name",
					    "namespace",
					    "labels",
					    "annotations",
					    "uid",
					    "creationTimestamp",
					    "resourceVersion",
					    "generation",
					    "deletionTimestamp",
					    "deletionGracePeriodSeconds",
					    "finalizers",
					    "ownerReferences",
					    "managedFields",
					    "generateName",
					    "selfLink",
					    NULL };
	const struct doc_node *md;
	int err;

	e->obj = o->root;
	if (strcmp(o->api_version, CRD_API_VERSION))
		return crd__fail(e, "UnsupportedVersion",
				 doc__get(o->root, "apiVersion"), "apiVersion",
				 "\"%s\" is not served by this agent; use %s",
				 o->api_version, CRD_API_VERSION);
	err = crd__check_map(o->root, "", top, e);
	if (err)
		return err;
	md = doc__get(o->root, "metadata");
	if (!md)
		return crd__fail(e, "InvalidField", o->root, "metadata",
				 "required field is missing");
	err = crd__check_map(md, "metadata", meta, e);
	if (err)
		return err;
	if (!crd__req_str(md, "name", "metadata", e))
		return -EINVAL;
	if (!dns_subdomain(o->name))
		return crd__fail(
			e, "InvalidField", doc__get(md, "name"),
			"metadata.name",
			"\"%s\" is not a valid object name (lowercase RFC 1123 subdomain: [a-z0-9.-], at most 253 characters)",
			o->name);
	if (!doc__get(o->root, "spec"))
		return crd__fail(e, "InvalidField", o->root, "spec",
				 "required field is missing");
	return 0;
}

bool crd__singular_matches(const char *seg, size_t len, const char *ref)
{
	size_t rlen = strlen(ref);

	if (rlen == len && !strncasecmp(seg, ref, len))
		return true;
	if (rlen == len + 1 && !strncasecmp(seg, ref, len) &&
	    tolower((unsigned char)ref[len]) == 's')
		return true;
	return rlen == len + 2 && !strncasecmp(seg, ref, len) &&
	       !strcasecmp(ref + len, "es");
}

bool crd__kind_matches(const char *kind, const char *ref)
{
	return kind && ref && crd__singular_matches(kind, strlen(kind), ref);
}

char *crd__strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}
