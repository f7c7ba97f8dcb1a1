// SPDX-License-Identifier: Apache-2.0
/*
 * Manifest source: the generic snapshot holder plus the on-disk backend.
 * The disk backend re-parses only when the set of files or one file's size,
 * mtime or inode changed, so a periodic reload costs a few stat() calls.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "bpf/fnv1a.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

struct manifest_source {
	const struct msrc_backend *be;
	void *impl;
	struct msrc_snapshot snap;
	uint64_t generation;
	char *source_error; /* last refresh failure, shown with errors() */
};

static void snapshot_release(struct msrc_snapshot *snap)
{
	for (size_t i = 0; i < snap->nerrors; i++)
		free(snap->errors[i]);
	free(snap->errors);
	for (size_t i = 0; i < snap->nskipped; i++)
		free(snap->skipped[i]);
	free(snap->skipped);
	free(snap->objs);
	if (snap->release)
		snap->release(snap->owner);
	memset(snap, 0, sizeof(*snap));
}

struct manifest_source *manifest_source__new(const struct msrc_backend *be,
					     void *impl)
{
	struct manifest_source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->be = be;
	s->impl = impl;
	return s;
}

void manifest_source__free(struct manifest_source *s)
{
	if (!s)
		return;
	snapshot_release(&s->snap);
	if (s->be && s->be->free)
		s->be->free(s->impl);
	free(s->source_error);
	free(s);
}

int manifest_source__reload(struct manifest_source *s)
{
	struct msrc_snapshot next = { 0 };
	int err;

	err = s->be->refresh(s->impl, &next);
	free(s->source_error);
	s->source_error = NULL;
	if (err < 0) {
		if (next.nerrors) {
			s->source_error = next.errors[0];
			next.errors[0] = NULL;
		} else if (asprintf(&s->source_error, "%s: %s", s->be->name,
				    strerror(-err)) < 0) {
			s->source_error = NULL;
		}
		snapshot_release(&next);
		return err;
	}
	if (err == 0)
		return 0;
	snapshot_release(&s->snap);
	s->snap = next;
	s->generation++;
	return 1;
}

const char *manifest_source__failure(const struct manifest_source *s)
{
	return s->source_error;
}

uint64_t manifest_source__generation(const struct manifest_source *s)
{
	return s->generation;
}

const struct mobject *manifest_source__next(const struct manifest_source *s,
					    const char *kind,
					    const struct mobject *prev)
{
	size_t i = prev ? (size_t)(prev - s->snap.objs) + 1 : 0;

	for (; i < s->snap.nobjs; i++)
		if (!kind || !strcmp(s->snap.objs[i].kind, kind))
			return &s->snap.objs[i];
	return NULL;
}

size_t manifest_source__count(const struct manifest_source *s)
{
	return s->snap.nobjs;
}

size_t manifest_source__nerrors(const struct manifest_source *s)
{
	return s->snap.nerrors + (s->source_error ? 1 : 0);
}

const char *manifest_source__error(const struct manifest_source *s, size_t i)
{
	if (i < s->snap.nerrors)
		return s->snap.errors[i];
	return i == s->snap.nerrors ? s->source_error : NULL;
}

size_t manifest_source__nskipped(const struct manifest_source *s)
{
	return s->snap.nskipped;
}

const char *manifest_source__skipped(const struct manifest_source *s, size_t i)
{
	return i < s->snap.nskipped ? s->snap.skipped[i] : NULL;
}

/* ---- the on-disk backend ---- */

struct dir_backend {
	char **paths;
	size_t npaths;
	uint64_t sig;
	bool have_sig;
};

struct dir_files {
	struct doc_file **files;
	size_t n;
};

static void dir_files_release(void *owner)
{
	struct dir_files *df = owner;

	if (!df)
		return;
	for (size_t i = 0; i < df->n; i++)
		doc__free_file(df->files[i]);
	free(df->files);
	free(df);
}

static int push_error(struct msrc_snapshot *snap, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int push_error(struct msrc_snapshot *snap, const char *fmt, ...)
{
	char **e = realloc(snap->errors, (snap->nerrors + 1) * sizeof(*e));
	va_list ap;
	int n;

	if (!e)
		return -ENOMEM;
	snap->errors = e;
	va_start(ap, fmt);
	n = vasprintf(&e[snap->nerrors], fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	snap->nerrors++;
	return 0;
}

static int push_object(struct msrc_snapshot *snap, const struct doc_node *n,
		       const char *file)
{
	struct mobject *o;
	const char *kind = doc__str(n, "kind");
	const char *api = doc__str(n, "apiVersion");

	if (n->kind == DOC_NULL)
		return 0; /* empty document, e.g. a trailing "---" */
	if (n->kind != DOC_MAP || !kind || !*kind)
		return push_error(
			snap,
			"%s:%u:%u: not a Kubernetes object: expected a mapping with string fields apiVersion and kind",
			file, n->line, n->col);
	/* `kubectl get -o yaml` wraps objects in a List: unwrap one level. */
	if (!strcmp(kind, "List")) {
		const struct doc_node *items = doc__get(n, "items");

		if (!items || items->kind != DOC_LIST)
			return push_error(
				snap, "%s:%u:%u: kind List needs an items list",
				file, n->line, n->col);
		for (size_t i = 0; i < items->list.n; i++) {
			const struct doc_node *it = items->list.items[i];
			int err;

			if (doc__str(it, "kind") &&
			    !strcmp(doc__str(it, "kind"), "List"))
				err = push_error(
					snap,
					"%s:%u:%u: a List inside a List is not supported",
					file, it->line, it->col);
			else
				err = push_object(snap, it, file);
			if (err)
				return err;
		}
		return 0;
	}
	if (!api)
		return push_error(snap, "%s:%u:%u: %s has no apiVersion", file,
				  n->line, n->col, kind);
	if (doc__count(n, DOC_MAX_OBJECT_NODES) > DOC_MAX_OBJECT_NODES)
		return push_error(
			snap,
			"%s:%u:%u: %s holds more than %d YAML nodes; split it into smaller objects",
			file, n->line, n->col, kind, DOC_MAX_OBJECT_NODES);
	o = realloc(snap->objs, (snap->nobjs + 1) * sizeof(*o));
	if (!o)
		return -ENOMEM;
	snap->objs = o;
	o = &o[snap->nobjs++];
	o->root = n;
	o->api_version = api;
	o->kind = kind;
	o->name = doc__str(n, "metadata.name");
	o->ns = doc__str(n, "metadata.namespace");
	o->file = file;
	o->line = n->line;
	return 0;
}

static bool yaml_name(const char *name)
{
	size_t len = strlen(name);

	if (name[0] == '.')
		return false; /* also skips a ConfigMap's ..data and ..2024_* */
	return (len > 5 && !strcmp(name + len - 5, ".yaml")) ||
	       (len > 4 && !strcmp(name + len - 4, ".yml"));
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct file_list {
	char **paths;
	size_t n;
};

static int list_add(struct file_list *fl, char *path)
{
	char **p = realloc(fl->paths, (fl->n + 1) * sizeof(*p));

	if (!p) {
		free(path);
		return -ENOMEM;
	}
	fl->paths = p;
	p[fl->n++] = path;
	return 0;
}

static void list_free(struct file_list *fl)
{
	for (size_t i = 0; i < fl->n; i++)
		free(fl->paths[i]);
	free(fl->paths);
}

/*
 * Sub-directories are read too, so a tree of manifests checks as
 * `kubectl apply -R` applies it. Symbolic links are followed (a mounted
 * ConfigMap is made of them), so the depth is bounded against loops.
 */
#define MSRC_MAX_DEPTH 8

static int note(struct msrc_snapshot *snap, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int note(struct msrc_snapshot *snap, const char *fmt, ...)
{
	char **e = realloc(snap->skipped, (snap->nskipped + 1) * sizeof(*e));
	va_list ap;
	int n;

	if (!e)
		return -ENOMEM;
	snap->skipped = e;
	va_start(ap, fmt);
	n = vasprintf(&e[snap->nskipped], fmt, ap);
	va_end(ap);
	if (n < 0)
		return -ENOMEM;
	snap->nskipped++;
	return 0;
}

static int scan_dir(const char *dir, int depth, struct file_list *fl,
		    struct msrc_snapshot *snap)
{
	struct dirent **ents = NULL;
	int n, err = 0;

	n = scandir(dir, &ents, NULL, NULL);
	if (n < 0) {
		err = -errno;
		push_error(snap, "%s: %s", dir, strerror(-err));
		return err;
	}
	for (int j = 0; j < n; j++) {
		const char *name = ents[j]->d_name;
		struct stat st;
		char *p = NULL;

		if (err || name[0] == '.') {
			/* also skips a ConfigMap's ..data and ..2024_* */
			free(ents[j]);
			continue;
		}
		if (asprintf(&p, "%s/%s", dir, name) < 0) {
			err = -ENOMEM;
		} else if (!stat(p, &st) && S_ISDIR(st.st_mode)) {
			if (depth >= MSRC_MAX_DEPTH)
				err = note(
					snap,
					"%s: skipped: deeper than %d directories",
					p, MSRC_MAX_DEPTH);
			else
				err = scan_dir(p, depth + 1, fl, snap);
			free(p);
		} else if (yaml_name(name)) {
			err = list_add(fl, p);
		} else {
			err = note(snap,
				   "%s: skipped: not a *.yaml or *.yml file",
				   p);
			free(p);
		}
		free(ents[j]);
	}
	free(ents);
	return err;
}

/* Lists the files to read and fingerprints them. */
static int collect_files(struct dir_backend *d, struct file_list *fl,
			 uint64_t *sig, struct msrc_snapshot *snap)
{
	uint64_t h = FNV1A64_OFFSET;
	int err = 0;

	for (size_t i = 0; i < d->npaths; i++) {
		struct stat st;

		if (stat(d->paths[i], &st)) {
			err = -errno;
			push_error(snap, "%s: %s", d->paths[i], strerror(-err));
			return err;
		}
		if (!S_ISDIR(st.st_mode)) {
			char *p = strdup(d->paths[i]);

			if (!p || list_add(fl, p))
				return -ENOMEM;
			continue;
		}
		err = scan_dir(d->paths[i], 1, fl, snap);
		if (err)
			return err;
	}
	if (fl->n)
		qsort(fl->paths, fl->n, sizeof(*fl->paths), name_cmp);
	/* a file named on its own and inside a listed directory: read once */
	for (size_t i = 1; i < fl->n;) {
		if (strcmp(fl->paths[i], fl->paths[i - 1])) {
			i++;
			continue;
		}
		free(fl->paths[i]);
		memmove(&fl->paths[i], &fl->paths[i + 1],
			(fl->n - i - 1) * sizeof(*fl->paths));
		fl->n--;
	}
	for (size_t i = 0; i < fl->n; i++) {
		struct stat st;

		h = fnv1a64(h, fl->paths[i], strlen(fl->paths[i]) + 1);
		if (stat(fl->paths[i], &st)) {
			/* vanished between scandir and stat: reported below */
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			push_error(snap, "%s: not a regular file, skipped",
				   fl->paths[i]);
			continue;
		}
		h = fnv1a64(h, &st.st_size, sizeof(st.st_size));
		h = fnv1a64(h, &st.st_mtim, sizeof(st.st_mtim));
		h = fnv1a64(h, &st.st_ino, sizeof(st.st_ino));
	}
	*sig = h;
	return 0;
}

static int dir_refresh(void *impl, struct msrc_snapshot *snap)
{
	struct dir_backend *d = impl;
	struct file_list fl = { 0 };
	struct dir_files *df = NULL;
	uint64_t sig = 0;
	int err;

	err = collect_files(d, &fl, &sig, snap);
	if (err)
		goto cleanup;
	if (d->have_sig && sig == d->sig) {
		err = 0;
		goto cleanup;
	}
	df = calloc(1, sizeof(*df));
	if (!df || !(df->files = calloc(fl.n + 1, sizeof(*df->files)))) {
		err = -ENOMEM;
		goto cleanup;
	}
	snap->owner = df;
	snap->release = dir_files_release;
	for (size_t i = 0; i < fl.n; i++) {
		struct doc_file *f = NULL;
		char msg[512];
		struct stat st;

		if (stat(fl.paths[i], &st) || !S_ISREG(st.st_mode))
			continue; /* reported by collect_files() */
		err = doc__parse_file(fl.paths[i], &f, msg, sizeof(msg));
		if (err) {
			/* One bad file never hides the good ones. */
			err = push_error(snap, "%s", msg);
			if (err)
				goto cleanup;
			continue;
		}
		df->files[df->n++] = f;
		for (size_t j = 0; j < f->ndocs; j++) {
			err = push_object(snap, f->docs[j], f->path);
			if (err)
				goto cleanup;
		}
	}
	d->sig = sig;
	d->have_sig = true;
	err = 1;
cleanup:
	list_free(&fl);
	return err;
}

uint64_t manifest_source__fingerprint(const char *path)
{
	char *paths[1] = { (char *)path };
	struct dir_backend d = { .paths = paths, .npaths = 1 };
	struct msrc_snapshot snap = { 0 };
	struct file_list fl = { 0 };
	uint64_t sig = 0;

	if (collect_files(&d, &fl, &sig, &snap))
		sig = 0;
	list_free(&fl);
	snapshot_release(&snap);
	return sig;
}

static void dir_free(void *impl)
{
	struct dir_backend *d = impl;

	if (!d)
		return;
	for (size_t i = 0; i < d->npaths; i++)
		free(d->paths[i]);
	free(d->paths);
	free(d);
}

static const struct msrc_backend dir_backend_ops = {
	.name = "manifests",
	.refresh = dir_refresh,
	.free = dir_free,
};

struct manifest_source *manifest_source__open_paths(const char *const *paths,
						    size_t npaths, char *err,
						    size_t errlen)
{
	struct dir_backend *d = calloc(1, sizeof(*d));
	struct manifest_source *s = NULL;
	int ret;

	if (!d || !(d->paths = calloc(npaths + 1, sizeof(*d->paths))))
		goto nomem;
	for (size_t i = 0; i < npaths; i++) {
		size_t len = strlen(paths[i]);

		d->paths[i] = strdup(paths[i]);
		if (!d->paths[i])
			goto nomem;
		d->npaths++;
		/* "dir/" and "dir" must give the same file names */
		while (len > 1 && d->paths[i][len - 1] == '/')
			d->paths[i][--len] = 0;
	}
	s = manifest_source__new(&dir_backend_ops, d);
	if (!s)
		goto nomem;
	d = NULL;
	ret = manifest_source__reload(s);
	if (ret < 0) {
		snprintf(err, errlen, "cannot read manifests: %s",
			 manifest_source__error(s, manifest_source__nerrors(s) -
							   1));
		manifest_source__free(s);
		return NULL;
	}
	return s;
nomem:
	snprintf(err, errlen, "out of memory");
	dir_free(d);
	return NULL;
}
