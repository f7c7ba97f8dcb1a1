/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Strict reading of CRD fields, shared by MetricDefinition and MetricPolicy:
 * unknown fields, wrong types and missing required fields are rejected the
 * way the API server's strict decoding (kubectl --validate=strict) rejects
 * them, with "file:line: field.path: what to fix".
 */
#ifndef MM_POLICY_CRD_FIELDS_H
#define MM_POLICY_CRD_FIELDS_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/contract/conditions.h"

struct doc_node;
struct mobject;

#define CRD_GROUP       "telemetry.miloapis.com"
#define CRD_API_VERSION "telemetry.miloapis.com/v1alpha1"

/* Why an object was rejected: becomes Accepted=False reason/message. */
struct crd_err {
	char reason[40];
	char msg[COND_MSG_MAX];
	/* where a message about a missing node points: the object (set by
	 * crd__check_object; zero-initialise the struct) */
	const struct doc_node *obj;
};

/* Fills e ("file:line: path: ...") and returns -EINVAL. */
int crd__fail(struct crd_err *e, const char *reason, const struct doc_node *at,
	      const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/*
 * n must be a mapping whose keys are all in allowed (NULL-terminated).
 * path names n in messages ("spec.metric").
 */
int crd__check_map(const struct doc_node *n, const char *path,
		   const char *const *allowed, struct crd_err *e);
/* Required non-empty string field; NULL with e filled when missing. */
const char *crd__req_str(const struct doc_node *map, const char *key,
			 const char *path, struct crd_err *e);
/* Optional string: 0 with *out NULL when absent, -EINVAL on wrong type. */
int crd__opt_str(const struct doc_node *map, const char *key, const char *path,
		 const char **out, struct crd_err *e);
/* Optional bool (default def). */
int crd__opt_bool(const struct doc_node *map, const char *key, const char *path,
		  bool def, bool *out, struct crd_err *e);

/*
 * apiVersion/kind/metadata checks common to our kinds: apiVersion must be
 * telemetry.miloapis.com/v1alpha1, metadata a valid ObjectMeta with a DNS
 * subdomain name, top-level fields among apiVersion/kind/metadata/spec/
 * status (status is written by controllers and ignored here).
 */
int crd__check_object(const struct mobject *o, struct crd_err *e);

/*
 * Does a resource reference (a Kind "HTTPRoute", a plural resource
 * "httproutes", or as the seed also writes, resource: HTTPRoute) name this
 * object kind? Case-insensitive; plural by "s" or "es".
 */
bool crd__kind_matches(const char *kind, const char *ref);
/* Same idea for the singular segment of a metric name ("httproute"). */
bool crd__singular_matches(const char *seg, size_t len, const char *ref);

char *crd__strdup(const char *s); /* NULL-safe */

#endif /* MM_POLICY_CRD_FIELDS_H */
