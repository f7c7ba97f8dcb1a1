/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A YAML document as a JSON-like tree, with the file and line every node came
 * from so that messages can say "routes.yaml:12: ...". Kubernetes manifests
 * are YAML that the API server turns into JSON; scalars here are resolved with
 * YAML 1.2's core schema (true/false, null/~, ints, floats; quoted scalars are
 * always strings), which is what the API server's decoder does for the fields
 * we read.
 *
 * Also the value model that CEL binds as `resource` and `item`.
 */
#ifndef MM_POLICY_DOC_H
#define MM_POLICY_DOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum doc_kind {
	DOC_NULL,
	DOC_BOOL,
	DOC_INT,
	DOC_DOUBLE,
	DOC_STRING,
	DOC_LIST,
	DOC_MAP,
};

struct doc_node {
	enum doc_kind kind;
	uint32_t line;    /* 1-based line in file, 0 when synthesised */
	uint32_t col;     /* 1-based column */
	const char *file; /* borrowed: lives as long as the doc_file */
	union {
		bool b;
		int64_t i;
		double d;
		struct {
			char *s; /* NUL-terminated; len excludes the NUL */
			size_t len;
		} str;
		struct {
			struct doc_node **items;
			size_t n;
		} list;
		struct {
			char **keys; /* in document order */
			struct doc_node **vals;
			size_t n;
		} map;
	};
};

/* One YAML file: each "---" document is one root. */
struct doc_file {
	char *path;
	struct doc_node **docs;
	size_t ndocs;
};

/* Limits that keep a hostile manifest from exhausting the agent. */
#define DOC_MAX_DEPTH 64
#define DOC_MAX_NODES (1 << 20)
#define DOC_MAX_BYTES (16 << 20)
/*
 * One Kubernetes object (a document, or an item of a List): nodes it may
 * hold. The largest HTTPRoute the Gateway API CRD admits (16 rules, 128
 * matches of 16 headers and 16 query params, 32 parentRefs...) is about
 * 20k nodes; with managedFields and status, three times that.
 */
#define DOC_MAX_OBJECT_NODES (1 << 17)

/*
 * Parse a YAML file or buffer. On error returns -errno (-EINVAL for bad YAML)
 * and writes "file:line:col: what to fix" into err.
 */
int doc__parse_file(const char *path, struct doc_file **out, char *err,
		    size_t errlen);
int doc__parse_buf(const char *name, const char *buf, size_t len,
		   struct doc_file **out, char *err, size_t errlen);
void doc__free_file(struct doc_file *f);

/* Map lookup by key, NULL when absent or when n is not a map. */
const struct doc_node *doc__get(const struct doc_node *n, const char *key);
/* Dotted path lookup: doc__path(n, "metadata.name"). */
const struct doc_node *doc__path(const struct doc_node *n, const char *path);
/* String value of a DOC_STRING node at path, NULL otherwise. */
const char *doc__str(const struct doc_node *n, const char *path);

/* Nodes in the tree at n, counting stops a little past limit. */
size_t doc__count(const struct doc_node *n, size_t limit);

/* Deep copy and free of a standalone node (synthesised nodes, file = NULL). */
struct doc_node *doc__clone(const struct doc_node *n);
void doc__free(struct doc_node *n);
/* Builders for synthesised trees (used by tests and the k8s watch). */
struct doc_node *doc__new_str(const char *s);
struct doc_node *doc__new_map(void);
int doc__map_set(struct doc_node *map, const char *key, struct doc_node *val);

const char *doc__kind_name(enum doc_kind k);

#endif /* MM_POLICY_DOC_H */
