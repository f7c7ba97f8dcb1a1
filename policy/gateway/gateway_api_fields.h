/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Internal to policy/gateway_api*.c: the parsing context, typed field
 * readers and the model arena. Optional readers leave *out untouched when
 * the field is absent or null and fail with a message naming the field
 * when it has the wrong type.
 */
#ifndef MM_POLICY_GATEWAY_API_FIELDS_H
#define MM_POLICY_GATEWAY_API_FIELDS_H

#include "policy/gateway/gateway_api.h"

/* Parsing context: the model, where messages go, and the file name. */
struct gw_ctx {
	struct gw_model *m;
	char *err;
	size_t errlen;
	const char *file;
	size_t nregexes; /* compiled for this object so far */
};

void *gateway_api_fields__alloc(struct gw_model *m, size_t size);
void *gateway_api_fields__array(struct gw_model *m, size_t n, size_t size);
char *gateway_api_fields__strdup(struct gw_model *m, const char *s);
char *gateway_api_fields__lower(struct gw_model *m, const char *s);
void gateway_api_fields__arena_free(struct gw_arena *a);

__attribute__((format(printf, 3, 4))) int
gateway_api_fields__bad(struct gw_ctx *c, const struct doc_node *n,
			const char *fmt, ...);
int gateway_api_fields__oom(struct gw_ctx *c);
/* -EINVAL naming field and limit when list has more than max items. */
int gateway_api_fields__max_items(struct gw_ctx *c, const struct doc_node *list,
				  size_t max, const char *field);

int gateway_api_fields__opt_str(struct gw_ctx *c, const struct doc_node *parent,
				const char *key, const char *what,
				const char **out);
int gateway_api_fields__req_str(struct gw_ctx *c, const struct doc_node *parent,
				const char *key, const char *what,
				const char **out);
int gateway_api_fields__opt_list(struct gw_ctx *c,
				 const struct doc_node *parent, const char *key,
				 const char *what, const struct doc_node **out);
int gateway_api_fields__opt_map(struct gw_ctx *c, const struct doc_node *parent,
				const char *key, const char *what,
				const struct doc_node **out);
int gateway_api_fields__opt_port(struct gw_ctx *c,
				 const struct doc_node *parent, const char *key,
				 const char *what, uint32_t *out);
int gateway_api_fields__item_map(struct gw_ctx *c, const struct doc_node *n,
				 const char *what, size_t i);
/* Lower-cased RFC 1123 hostname, optionally "*."-prefixed. */
int gateway_api_fields__hostname(struct gw_ctx *c, const struct doc_node *n,
				 const char *what, const char **out);
/* RE2 (policy/regex/regex.h), whole-value match, owned by the model. */
int gateway_api_fields__compile_re(struct gw_ctx *c, const struct doc_node *n,
				   const char *pattern, struct regex **out);
/* metadata.name (required) and metadata.namespace (default "default"). */
int gateway_api_fields__metadata(struct gw_ctx *c, const struct doc_node *root,
				 const char *kind, const char **ns,
				 const char **name);

/* HTTPRoute manifests (gateway_api_route.c). */
int gateway_api_route__add(struct gw_ctx *c, const struct doc_node *root);
/* gateway_ns.c: a v1 Namespace; a listener's namespaces.selector */
int gateway_ns__add(struct gw_ctx *c, const struct doc_node *root);
/* gateway_svc.c: a v1 Service of a Gateway's proxy */
int gateway_svc__add(struct gw_ctx *c, const struct doc_node *root);
/* nss: allowedRoutes.namespaces, whose "selector" is read */
int gateway_ns__selector(struct gw_ctx *c, const struct doc_node *nss,
			 struct gw_selector **out);

#endif /* MM_POLICY_GATEWAY_API_FIELDS_H */
