/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where Kubernetes objects come from. Today: YAML manifests on disk (a
 * directory of multi-document *.yaml / *.yml files, or single files; a
 * mounted ConfigMap works because its entries are symlinks we follow).
 * Next: the Kubernetes API. Both fill the same snapshot, so the contract
 * and the policy engine never know which one they read.
 *
 * A snapshot is immutable between refreshes: consumers (contract, engine)
 * copy or clone what they keep, so the next refresh may free it.
 */
#ifndef MM_POLICY_MANIFEST_SOURCE_H
#define MM_POLICY_MANIFEST_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct doc_node;

/* One Kubernetes object as read from a source. Strings borrow from root. */
struct mobject {
	const struct doc_node *root;
	const char *api_version; /* NULL when missing */
	const char *kind;
	const char *name; /* metadata.name, NULL when missing */
	const char *ns;   /* metadata.namespace, NULL when missing */
	const char *file; /* where it was read; "k8s" for the API */
	uint32_t line;
};

/* What a backend produces on each refresh. */
struct msrc_snapshot {
	struct mobject *objs;
	size_t nobjs;
	char **errors; /* "file:line:col: what to fix" */
	size_t nerrors;
	char **skipped; /* "path: skipped: why" (not YAML...), not errors */
	size_t nskipped;
	void *owner; /* backend data the objects borrow from */
	void (*release)(void *owner);
};

struct msrc_backend {
	const char *name;
	/*
	 * Fill *snap with a fresh view when anything changed since the last
	 * call (return 1), or leave it alone (return 0). -errno when the source
	 * itself is unusable (directory gone...): the old snapshot stays.
	 */
	int (*refresh)(void *impl, struct msrc_snapshot *snap);
	void (*free)(void *impl);
};

struct manifest_source;

/* Generic constructor for any backend; the source owns impl. */
struct manifest_source *manifest_source__new(const struct msrc_backend *be,
					     void *impl);
/*
 * The manifests backend: each path is a directory (its *.yaml, *.yml files
 * and sub-directories', hidden names skipped, sorted by path; other files
 * are listed by skipped()) or a file. Reads
 * once before returning. NULL with err filled when a path cannot be read.
 */
struct manifest_source *manifest_source__open_paths(const char *const *paths,
						    size_t npaths, char *err,
						    size_t errlen);
void manifest_source__free(struct manifest_source *s);
/*
 * What the manifests backend would read under path (file names, sizes,
 * mtimes, inodes), hashed without reading it: changes when a reload would
 * find something new. 0 when path cannot be read.
 */
uint64_t manifest_source__fingerprint(const char *path);

/*
 * Re-read the source. Returns 1 when the snapshot changed (generation
 * bumped), 0 when nothing changed, -errno when the source failed (the old
 * snapshot stays and the error is kept in errors()).
 */
int manifest_source__reload(struct manifest_source *s);
/*
 * Why the last manifest_source__reload() failed (the old snapshot stays);
 * NULL after one that did not.
 */
const char *manifest_source__failure(const struct manifest_source *s);
/* Bumps by one for each changed snapshot; starts at 1. */
uint64_t manifest_source__generation(const struct manifest_source *s);

/* Objects in source order. kind NULL lists every object. */
const struct mobject *manifest_source__next(const struct manifest_source *s,
					    const char *kind,
					    const struct mobject *prev);
size_t manifest_source__count(const struct manifest_source *s);
/* Problems that kept documents from becoming objects. */
size_t manifest_source__nerrors(const struct manifest_source *s);
const char *manifest_source__error(const struct manifest_source *s, size_t i);
/* Files a directory held that were not read, and why ("x.md: skipped: ..."). */
size_t manifest_source__nskipped(const struct manifest_source *s);
const char *manifest_source__skipped(const struct manifest_source *s, size_t i);

#endif /* MM_POLICY_MANIFEST_SOURCE_H */
