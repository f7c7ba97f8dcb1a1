/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The part of the Gateway API (gateway.networking.k8s.io/v1) that decides
 * which HTTPRoute rule a request belongs to: Gateways with their listeners
 * and HTTPRoutes with parentRefs, hostnames and rules. Read from doc trees
 * (policy/source/doc.h) and validated with "file:line: what to fix" messages.
 *
 * Defaults are applied here, as the API server's CRD defaults would be, so
 * the compiler never has to think about a missing field:
 *   - metadata.namespace "default"
 *   - rules absent -> one rule; matches absent -> one match; match.path
 *     absent or path.type absent -> PathPrefix; path.value absent -> "/"
 *   - header/query match type Exact
 *   - parentRef group gateway.networking.k8s.io, kind Gateway, namespace
 *     the route's; backendRef group "" (core), kind Service, namespace the
 *     route's, weight 1
 *   - listener allowedRoutes.namespaces.from Same
 * metadata.creationTimestamp is optional: a route without one counts as
 * newer than every route that has one (see route_compile.c).
 */
#ifndef MM_POLICY_GATEWAY_API_H
#define MM_POLICY_GATEWAY_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "policy/regex/regex.h"
#include "policy/source/doc.h"

#define GW_GROUP "gateway.networking.k8s.io"

/*
 * The Gateway API's own bounds (v1 CRDs: maxItems, maxLength and the
 * HTTPRoute rules' CEL rule "the total number of matches across all rules
 * in a route must be less than 128"). The API server enforces them; we do
 * too, so a manifest on disk or a route from an older API server cannot make
 * the table larger than any conforming implementation would see.
 */
#define GW_MAX_LISTENERS     64
#define GW_MAX_HOSTNAMES     16
#define GW_MAX_PARENT_REFS   32
#define GW_MAX_RULES         16
#define GW_MAX_MATCHES       64  /* per rule */
#define GW_MAX_ROUTE_MATCHES 128 /* across the rules of one route */
#define GW_MAX_HEADERS       16  /* header matches per match */
#define GW_MAX_QUERY_PARAMS  16
#define GW_MAX_FILTERS       16
#define GW_MAX_BACKEND_REFS  16
#define GW_MAX_PATH_LEN      1024 /* HTTPPathMatch.value */
#define GW_MAX_HEADER_NAME   256
#define GW_MAX_HEADER_VALUE  4096
/*
 * Ours, not the API's (RegularExpression is implementation-specific):
 * compiled patterns per Gateway or HTTPRoute, each bounded by
 * REGEX_MAX_MEM (policy/regex/regex.h).
 */
#define GW_MAX_OBJECT_REGEXES 64

enum gw_from {
	GW_FROM_SAME,     /* routes in the Gateway's namespace */
	GW_FROM_ALL,      /* routes in any namespace */
	GW_FROM_SELECTOR, /* routes in namespaces whose labels match */
};

struct gw_label {
	const char *key, *value;
};

enum gw_sel_op {
	GW_SEL_IN,
	GW_SEL_NOT_IN,
	GW_SEL_EXISTS,
	GW_SEL_DOES_NOT_EXIST,
};

struct gw_sel_expr {
	const char *key;
	enum gw_sel_op op;
	const char **values;
	size_t nvalues;
};

/* metav1.LabelSelector: every matchLabels pair AND every expression */
struct gw_selector {
	struct gw_label *labels;
	size_t nlabels;
	struct gw_sel_expr *exprs;
	size_t nexprs;
};

/* A v1 Namespace: its name and labels (kubernetes.io/metadata.name added) */
struct gw_namespace {
	const char *name;
	struct gw_label *labels;
	size_t nlabels;
};

/*
 * The Service of a Gateway's proxy (gateway_svc.c): listener port ->
 * container port the proxy accepts it on.
 */
struct gw_service {
	const char *ns, *name;
	const char *gw_ns, *gw_name; /* the Gateway its labels name */
	struct {
		uint32_t port, target;
	} * ports;
	size_t nports;
};

struct gw_listener {
	const char *name;
	const char *hostname; /* lower-cased; NULL: any host */
	const char *protocol; /* HTTP or HTTPS (others are skipped) */
	uint32_t port;
	enum gw_from from;
	struct gw_selector *selector; /* GW_FROM_SELECTOR */
	bool allows_httproute; /* allowedRoutes.kinds permits HTTPRoute */
};

struct gw_gateway {
	const char *ns, *name;
	const char *file;
	uint32_t line;
	struct gw_listener *listeners;
	size_t nlisteners;
};

enum gw_path_type {
	GW_PATH_EXACT,
	GW_PATH_PREFIX,
	GW_PATH_REGEX,
};

enum gw_value_type {
	GW_VALUE_EXACT,
	GW_VALUE_REGEX,
};

/* One header or query parameter match. */
struct gw_kv_match {
	const char *name; /* headers: lower-cased (names are case-insensitive) */
	const char *value;
	enum gw_value_type type;
	struct regex *re; /* RE2, whole-value match, when type is REGEX */
};

struct gw_match {
	enum gw_path_type path_type;
	const char *path;
	struct regex *path_re; /* RE2, whole-path match, for GW_PATH_REGEX */
	uint8_t method;        /* enum mm_method, or MM_M_ANY */
	struct gw_kv_match *headers;
	size_t nheaders;
	struct gw_kv_match *query;
	size_t nquery;
	uint32_t line;
};

struct gw_backend {
	const char *group, *kind; /* "" and "Service" by default */
	const char *ns, *name;
	uint32_t port;
	uint32_t weight;
};

struct gw_rule {
	struct gw_match *matches;
	size_t nmatches;
	struct gw_backend *backends;
	size_t nbackends;
	uint32_t line;
	/*
	 * "file:line: why" when the rule is invalid: it stays in place with
	 * no matches (rule indexes keep their meaning) and attaches nothing.
	 */
	const char *dropped;
};

struct gw_parent_ref {
	const char *group, *kind, *ns, *name;
	const char *section; /* NULL: every listener */
	uint32_t port;       /* 0: any */
};

struct gw_route {
	const char *ns, *name, *uid; /* uid "" when absent */
	const char *created; /* creationTimestamp as written, NULL if absent */
	int64_t created_s;   /* seconds since the epoch when created != NULL */
	const char **hostnames; /* lower-cased */
	size_t nhostnames;
	struct gw_parent_ref *parents;
	size_t nparents;
	struct gw_rule *rules;
	size_t nrules;
	size_t ndropped; /* rules with dropped set; never all of them */
	const char *file;
	uint32_t line;
};

struct gw_arena;

struct gw_model {
	struct gw_gateway **gateways;
	size_t ngateways;
	struct gw_route **routes;
	size_t nroutes;
	struct gw_namespace **namespaces;
	size_t nnamespaces;
	struct gw_service **services; /* those naming a Gateway */
	size_t nservices;
	struct gw_arena *arena; /* every string and array above */
	struct regex **regexes; /* compiled patterns, freed with the model */
	size_t nregexes;
	size_t skipped; /* documents of kinds we do not handle */
	/*
	 * "file:line: why" for each file or object gateway_api__load_dir()
	 * left out (unreadable, bad YAML, invalid, duplicate, over a limit):
	 * the Gateway API rejects a bad route alone, never its neighbours.
	 */
	char **rejected;
	size_t nrejected;
};

struct gw_model *gateway_api__new(void);
void gateway_api__free(struct gw_model *m);

/*
 * Add one manifest. Gateway and HTTPRoute of GW_GROUP, v1 Namespace (its
 * labels, for allowedRoutes selectors) and a v1 Service whose labels name a
 * Gateway (its ports, for the listener of a socket) are taken; any other
 * kind is counted in m->skipped and ignored (a directory of manifests holds
 * MetricDefinitions and Services too). -EINVAL with "file:line: ..." in err
 * for a Gateway or HTTPRoute that is not valid; -EEXIST for a duplicate.
 */
int gateway_api__add_doc(struct gw_model *m, const struct doc_node *root,
			 char *err, size_t errlen);

/*
 * A manifest file, or every *.yaml and *.yml under a directory
 * (manifest_source__open_paths()). A file or object that cannot be used is
 * recorded in m->rejected and the rest still load; -errno only when the
 * path cannot be read or memory runs out.
 */
int gateway_api__load_dir(struct gw_model *m, const char *dir, char *err,
			  size_t errlen);
/*
 * The same from a manifests source already read (a caller that reads the
 * directory for other objects too parses it once): its errors() and each
 * object that cannot be used go to m->rejected.
 */
struct manifest_source;
int gateway_api__load_source(struct gw_model *m,
			     const struct manifest_source *src, char *err,
			     size_t errlen);

/*
 * One line per dropped rule to f (NULL: none): "PREFIX HTTPRoute NS/NAME:
 * Dropped Rule N: file:line: why" (the Gateway API's PartiallyInvalid
 * wording). Returns the number of dropped rules.
 */
size_t gateway_api__log_dropped(const struct gw_model *m, FILE *f,
				const char *prefix);

/* Lookup by namespace/name, NULL when absent. */
const struct gw_gateway *gateway_api__gateway(const struct gw_model *m,
					      const char *ns, const char *name);
/* The Namespace object named name, NULL when the model has none. */
const struct gw_namespace *gateway_api__namespace(const struct gw_model *m,
						  const char *name);
/*
 * The targetPort of listener port `port` in the Service of Gateway g's
 * proxy, 0 when no Service of the model says.
 */
uint32_t gateway_api__target_port(const struct gw_model *m,
				  const struct gw_gateway *g, uint32_t port);
/* Does selector s select namespace ns? */
bool gateway_api__selects(const struct gw_selector *s,
			  const struct gw_namespace *ns);

#endif /* MM_POLICY_GATEWAY_API_H */
