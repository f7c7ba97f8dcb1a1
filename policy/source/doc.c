// SPDX-License-Identifier: Apache-2.0
/*
 * YAML (libyaml event API) -> doc_node trees with file/line for messages.
 * Scalars resolve with YAML 1.2's core schema; aliases are expanded by
 * deep copy and count against DOC_MAX_NODES, so "billion laughs" documents
 * fail with a message instead of exhausting memory.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "policy/source/doc.h"

/*
 * Anchors by name and, while parsing, every map key by (map, key): open
 * addressing with linear probing, so a document with 100k keys or anchors
 * parses in linear time (a linear scan per key made it quadratic: 19 s for
 * 100k keys).
 */
struct anchor {
	char *name; /* NULL: empty slot */
	struct doc_node *node;
	uint64_t hash;
};

struct seen_key {
	const struct doc_node *map; /* NULL: empty slot */
	const char *key;            /* borrowed from map->map.keys[] */
	uint64_t hash;
};

struct parser {
	yaml_parser_t yp;
	const char *file;
	size_t nodes;
	struct anchor *anchors; /* open addressing, capacity a power of 2 */
	size_t nanchors, anchor_cap;
	struct seen_key *keys;
	size_t nkeys, key_cap;
	/* anchored nodes the tree does not keep (a key, a null document):
	 * aliases may still copy them until the stream ends */
	struct doc_node **kept;
	size_t nkept;
	char *err;
	size_t errlen;
};

static uint64_t hash_str(uint64_t h, const char *s)
{
	/* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static uint64_t hash_key(const struct doc_node *map, const char *key)
{
	uint64_t h = hash_str(0xcbf29ce484222325ull, key);

	return h ^ ((uintptr_t)map * 0x9e3779b97f4a7c15ull);
}

static int fail(struct parser *p, uint32_t line, uint32_t col, const char *msg)
{
	snprintf(p->err, p->errlen, "%s:%u:%u: %s", p->file, line, col, msg);
	return -EINVAL;
}

static struct doc_node *node_new(struct parser *p, enum doc_kind k,
				 const yaml_mark_t *m)
{
	struct doc_node *n;

	if (p && ++p->nodes > DOC_MAX_NODES)
		return NULL;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->kind = k;
	if (m) {
		n->line = m->line + 1;
		n->col = m->column + 1;
	}
	n->file = p ? p->file : NULL;
	return n;
}

static bool is_int(const char *s, int64_t *out)
{
	char *end;
	long long v;
	int base = 10;
	const char *q = s;

	if (*q == '+' || *q == '-')
		q++;
	if (!*q)
		return false;
	if (q[0] == '0' && (q[1] == 'x' || q[1] == 'o')) {
		base = q[1] == 'x' ? 16 : 8;
		if (q != s)
			return false;
		q += 2;
		/*
		 * Only digits of the base: strtoll() would skip blanks and
		 * take a sign, so "0x 50" used to read as 80.
		 */
		if (!*q)
			return false;
		for (const char *c = q; *c; c++)
			if (base == 16 ? !isxdigit((unsigned char)*c)
				       : (*c < '0' || *c > '7'))
				return false;
	} else {
		for (const char *c = q; *c; c++)
			if (!isdigit((unsigned char)*c))
				return false;
		q = s;
	}
	errno = 0;
	v = strtoll(q, &end, base);
	if (errno || *end || end == q)
		return false;
	*out = v;
	return true;
}

static bool is_float(const char *s, double *out)
{
	char *end;
	const char *q = s;
	bool digit = false;

	if (!strcmp(s, ".inf") || !strcmp(s, ".Inf") || !strcmp(s, ".INF") ||
	    !strcmp(s, "+.inf")) {
		*out = INFINITY;
		return true;
	}
	if (!strcmp(s, "-.inf") || !strcmp(s, "-.Inf")) {
		*out = -INFINITY;
		return true;
	}
	if (!strcmp(s, ".nan") || !strcmp(s, ".NaN")) {
		*out = NAN;
		return true;
	}
	/* core schema: [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
	if (*q == '+' || *q == '-')
		q++;
	for (const char *c = q; *c; c++) {
		if (isdigit((unsigned char)*c))
			digit = true;
		else if (!strchr(".eE+-", *c))
			return false;
	}
	if (!digit)
		return false;
	errno = 0;
	*out = strtod(s, &end);
	return !errno && !*end;
}

static struct doc_node *scalar(struct parser *p, const yaml_event_t *ev)
{
	const char *v = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	bool plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	const char *tag = (const char *)ev->data.scalar.tag;
	struct doc_node *n;
	int64_t i;
	double d;

	/* An explicit !!str tag keeps "true" or "123" a string. */
	if (tag && !strcmp(tag, YAML_STR_TAG))
		plain = false;
	if (plain) {
		if (!len || !strcmp(v, "~") || !strcmp(v, "null") ||
		    !strcmp(v, "Null") || !strcmp(v, "NULL"))
			return node_new(p, DOC_NULL, &ev->start_mark);
		if (!strcmp(v, "true") || !strcmp(v, "True") ||
		    !strcmp(v, "TRUE") || !strcmp(v, "false") ||
		    !strcmp(v, "False") || !strcmp(v, "FALSE")) {
			n = node_new(p, DOC_BOOL, &ev->start_mark);
			if (n)
				n->b = v[0] == 't' || v[0] == 'T';
			return n;
		}
		if (is_int(v, &i)) {
			n = node_new(p, DOC_INT, &ev->start_mark);
			if (n)
				n->i = i;
			return n;
		}
		if (is_float(v, &d)) {
			n = node_new(p, DOC_DOUBLE, &ev->start_mark);
			if (n)
				n->d = d;
			return n;
		}
	}
	n = node_new(p, DOC_STRING, &ev->start_mark);
	if (!n)
		return NULL;
	n->str.s = malloc(len + 1);
	if (!n->str.s) {
		free(n);
		return NULL;
	}
	memcpy(n->str.s, v, len);
	n->str.s[len] = 0;
	n->str.len = len;
	return n;
}

static struct doc_node *clone_counted(struct parser *p,
				      const struct doc_node *n, int depth);

/*
 * Room for element n of an array the parser appends to: the capacity is the
 * next power of two, so it grows only when n is one. Growing by one element
 * each time copied the array on every append with allocators that never
 * grow in place (ASan's): quadratic again.
 */
static void *grow(void *arr, size_t n, size_t size)
{
	if (n & (n - 1))
		return arr;
	return realloc(arr, (n ? 2 * n : 1) * size);
}

static int grow_anchors(struct parser *p)
{
	size_t cap = p->anchor_cap ? p->anchor_cap * 2 : 64;
	struct anchor *a = calloc(cap, sizeof(*a));

	if (!a)
		return -ENOMEM;
	for (size_t i = 0; i < p->anchor_cap; i++) {
		size_t j;

		if (!p->anchors[i].name)
			continue;
		for (j = p->anchors[i].hash & (cap - 1); a[j].name;
		     j = (j + 1) & (cap - 1))
			;
		a[j] = p->anchors[i];
	}
	free(p->anchors);
	p->anchors = a;
	p->anchor_cap = cap;
	return 0;
}

static struct anchor *find_anchor(const struct parser *p, const char *name,
				  uint64_t h)
{
	if (!p->anchor_cap)
		return NULL;
	for (size_t j = h & (p->anchor_cap - 1);;
	     j = (j + 1) & (p->anchor_cap - 1)) {
		struct anchor *a = &p->anchors[j];

		if (!a->name)
			return a;
		if (a->hash == h && !strcmp(a->name, name))
			return a;
	}
}

/* A later anchor of the same name replaces the earlier (YAML 1.2 3.2.2.2). */
static int remember_anchor(struct parser *p, const yaml_char_t *name,
			   struct doc_node *n)
{
	uint64_t h;
	struct anchor *a;

	if (!name)
		return 0;
	h = hash_str(0xcbf29ce484222325ull, (const char *)name);
	if ((p->nanchors + 1) * 2 > p->anchor_cap && grow_anchors(p))
		return -ENOMEM;
	a = find_anchor(p, (const char *)name, h);
	if (!a->name) {
		a->name = strdup((const char *)name);
		if (!a->name)
			return -ENOMEM;
		a->hash = h;
		p->nanchors++;
	}
	a->node = n;
	return 0;
}

static int grow_keys(struct parser *p)
{
	size_t cap = p->key_cap ? p->key_cap * 2 : 256;
	struct seen_key *k = calloc(cap, sizeof(*k));

	if (!k)
		return -ENOMEM;
	for (size_t i = 0; i < p->key_cap; i++) {
		size_t j;

		if (!p->keys[i].map)
			continue;
		for (j = p->keys[i].hash & (cap - 1); k[j].map;
		     j = (j + 1) & (cap - 1))
			;
		k[j] = p->keys[i];
	}
	free(p->keys);
	p->keys = k;
	p->key_cap = cap;
	return 0;
}

/* 1 when map already has key, else records it (key must stay valid). */
static int key_seen(struct parser *p, const struct doc_node *map,
		    const char *key)
{
	uint64_t h = hash_key(map, key);
	size_t j;

	if ((p->nkeys + 1) * 2 > p->key_cap && grow_keys(p))
		return -ENOMEM;
	for (j = h & (p->key_cap - 1); p->keys[j].map;
	     j = (j + 1) & (p->key_cap - 1))
		if (p->keys[j].hash == h && p->keys[j].map == map &&
		    !strcmp(p->keys[j].key, key))
			return 1;
	p->keys[j] = (struct seen_key){ .map = map, .key = key, .hash = h };
	p->nkeys++;
	return 0;
}

/*
 * Free a node the tree does not keep, unless an anchor points at it: then
 * it lives until the end of the stream, for aliases to copy.
 */
static int discard(struct parser *p, struct doc_node *n, bool anchored)
{
	struct doc_node **k;

	if (!anchored) {
		doc__free(n);
		return 0;
	}
	k = grow(p->kept, p->nkept, sizeof(*k));
	if (!k) {
		/* the anchor must not dangle: forget the node everywhere */
		for (size_t i = 0; i < p->anchor_cap; i++)
			if (p->anchors[i].node == n)
				p->anchors[i].node = NULL;
		doc__free(n);
		return -ENOMEM;
	}
	p->kept = k;
	p->kept[p->nkept++] = n;
	return 0;
}

static bool event_anchored(const yaml_event_t *ev)
{
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		return ev->data.scalar.anchor;
	case YAML_SEQUENCE_START_EVENT:
		return ev->data.sequence_start.anchor;
	case YAML_MAPPING_START_EVENT:
		return ev->data.mapping_start.anchor;
	default:
		return false;
	}
}

static int next_event(struct parser *p, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&p->yp, ev)) {
		char msg[256];

		snprintf(msg, sizeof(msg), "invalid YAML: %s%s%s",
			 p->yp.problem ? p->yp.problem : "parse error",
			 p->yp.context ? " " : "",
			 p->yp.context ? p->yp.context : "");
		return fail(p, p->yp.problem_mark.line + 1,
			    p->yp.problem_mark.column + 1, msg);
	}
	return 0;
}

static int parse_node(struct parser *p, yaml_event_t *ev, int depth,
		      struct doc_node **out);

static int parse_children(struct parser *p, struct doc_node *n, int depth)
{
	yaml_event_t ev;
	yaml_event_type_t end = n->kind == DOC_LIST ? YAML_SEQUENCE_END_EVENT
						    : YAML_MAPPING_END_EVENT;
	int err;

	for (;;) {
		struct doc_node *key = NULL, *val = NULL;
		bool key_anchored;

		err = next_event(p, &ev);
		if (err)
			return err;
		if (ev.type == end) {
			yaml_event_delete(&ev);
			return 0;
		}
		key_anchored = n->kind == DOC_MAP && event_anchored(&ev);
		err = parse_node(p, &ev, depth + 1,
				 n->kind == DOC_LIST ? &val : &key);
		if (err)
			return err;
		if (n->kind == DOC_LIST) {
			void *items =
				grow(n->list.items, n->list.n, sizeof(val));
			if (!items) {
				doc__free(val);
				return -ENOMEM;
			}
			n->list.items = items;
			n->list.items[n->list.n++] = val;
			continue;
		}
		if (key->kind == DOC_LIST || key->kind == DOC_MAP) {
			err = fail(p, key->line, key->col,
				   "map keys must be scalars");
			doc__free(key);
			return err;
		}
		err = next_event(p, &ev);
		if (!err)
			err = parse_node(p, &ev, depth + 1, &val);
		if (err) {
			doc__free(key);
			return err;
		}
		{
			char buf[64];
			const char *ks = buf;
			char **keys;
			struct doc_node **vals;

			if (key->kind == DOC_STRING)
				ks = key->str.s;
			else if (key->kind == DOC_INT)
				snprintf(buf, sizeof(buf), "%lld",
					 (long long)key->i);
			else if (key->kind == DOC_BOOL)
				ks = key->b ? "true" : "false";
			else if (key->kind == DOC_DOUBLE)
				snprintf(buf, sizeof(buf), "%g", key->d);
			else
				ks = "null";
			keys = grow(n->map.keys, n->map.n, sizeof(*keys));
			if (keys)
				n->map.keys = keys;
			vals = grow(n->map.vals, n->map.n, sizeof(*vals));
			if (vals)
				n->map.vals = vals;
			if (!keys || !vals || !(keys[n->map.n] = strdup(ks))) {
				doc__free(key);
				doc__free(val);
				return -ENOMEM;
			}
			n->map.vals[n->map.n++] = val;
			err = key_seen(p, n, keys[n->map.n - 1]);
			if (err > 0) {
				char msg[200];

				snprintf(msg, sizeof(msg),
					 "duplicate key \"%.120s\"", ks);
				err = fail(p, key->line, key->col, msg);
			}
			if (!err)
				err = discard(p, key, key_anchored);
			else
				doc__free(key);
			if (err)
				return err;
		}
	}
}

static int parse_node(struct parser *p, yaml_event_t *ev, int depth,
		      struct doc_node **out)
{
	struct doc_node *n = NULL;
	int err = 0;

	*out = NULL;
	if (depth > DOC_MAX_DEPTH) {
		err = fail(p, ev->start_mark.line + 1,
			   ev->start_mark.column + 1,
			   "document nested too deeply (limit 64 levels)");
		goto cleanup;
	}
	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		n = scalar(p, ev);
		if (n)
			err = remember_anchor(p, ev->data.scalar.anchor, n);
		break;
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT: {
		bool seq = ev->type == YAML_SEQUENCE_START_EVENT;
		const yaml_char_t *anchor = seq ? ev->data.sequence_start.anchor
						: ev->data.mapping_start.anchor;

		n = node_new(p, seq ? DOC_LIST : DOC_MAP, &ev->start_mark);
		if (!n)
			break;
		err = parse_children(p, n, depth);
		if (!err)
			err = remember_anchor(p, anchor, n);
		break;
	}
	case YAML_ALIAS_EVENT: {
		const char *name = (const char *)ev->data.alias.anchor;
		struct anchor *a = find_anchor(
			p, name, hash_str(0xcbf29ce484222325ull, name));

		if (a && a->name && a->node)
			n = clone_counted(p, a->node, depth);
		if (!n && p->nodes <= DOC_MAX_NODES) {
			err = fail(p, ev->start_mark.line + 1,
				   ev->start_mark.column + 1,
				   "alias to an unknown anchor");
			goto cleanup;
		}
		break;
	}
	default:
		err = fail(p, ev->start_mark.line + 1,
			   ev->start_mark.column + 1, "unexpected YAML event");
		goto cleanup;
	}
	if (!n && !err) {
		err = p->nodes > DOC_MAX_NODES
			      ? fail(p, ev->start_mark.line + 1,
				     ev->start_mark.column + 1,
				     "document too large (more than 1048576 nodes)")
			      : -ENOMEM;
	}
cleanup:
	yaml_event_delete(ev);
	if (err) {
		doc__free(n);
		return err;
	}
	*out = n;
	return 0;
}

static int parse_stream(struct parser *p, struct doc_file *f)
{
	yaml_event_t ev;
	int err;

	for (;;) {
		err = next_event(p, &ev);
		if (err)
			return err;
		if (ev.type == YAML_STREAM_END_EVENT) {
			yaml_event_delete(&ev);
			return 0;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT) {
			struct doc_node *root = NULL, **docs;
			bool anchored;

			yaml_event_delete(&ev);
			err = next_event(p, &ev);
			if (err)
				return err;
			if (ev.type == YAML_DOCUMENT_END_EVENT) {
				/* empty document between "---" lines */
				yaml_event_delete(&ev);
				continue;
			}
			anchored = event_anchored(&ev);
			err = parse_node(p, &ev, 0, &root);
			if (err)
				return err;
			err = next_event(p, &ev);
			if (err) {
				doc__free(root);
				return err;
			}
			yaml_event_delete(&ev);
			/* a document holding only a comment or "null" */
			if (root->kind == DOC_NULL) {
				err = discard(p, root, anchored);
				if (err)
					return err;
				continue;
			}
			docs = grow(f->docs, f->ndocs, sizeof(*docs));
			if (!docs) {
				doc__free(root);
				return -ENOMEM;
			}
			f->docs = docs;
			f->docs[f->ndocs++] = root;
			continue;
		}
		yaml_event_delete(&ev);
	}
}

int doc__parse_buf(const char *name, const char *buf, size_t len,
		   struct doc_file **out, char *err, size_t errlen)
{
	struct parser p = { .err = err, .errlen = errlen };
	struct doc_file *f;
	int ret;

	*out = NULL;
	if (errlen)
		err[0] = 0;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->path = strdup(name ? name : "<input>");
	if (!f->path) {
		free(f);
		return -ENOMEM;
	}
	p.file = f->path;
	if (len > DOC_MAX_BYTES) {
		ret = fail(&p, 1, 1, "file larger than 16 MiB");
		goto cleanup;
	}
	if (!yaml_parser_initialize(&p.yp)) {
		ret = -ENOMEM;
		goto cleanup;
	}
	yaml_parser_set_input_string(&p.yp, (const unsigned char *)buf, len);
	ret = parse_stream(&p, f);
	yaml_parser_delete(&p.yp);
cleanup:
	for (size_t i = 0; i < p.anchor_cap; i++)
		free(p.anchors[i].name);
	free(p.anchors);
	free(p.keys);
	for (size_t i = 0; i < p.nkept; i++)
		doc__free(p.kept[i]);
	free(p.kept);
	if (ret) {
		if (ret == -ENOMEM && errlen)
			snprintf(err, errlen, "%s: out of memory", f->path);
		doc__free_file(f);
		return ret;
	}
	*out = f;
	return 0;
}

int doc__parse_file(const char *path, struct doc_file **out, char *err,
		    size_t errlen)
{
	char *buf = NULL;
	struct stat st;
	size_t got = 0;
	int fd, ret;

	*out = NULL;
	/* O_NONBLOCK: opening a FIFO named *.yaml must not wait for a writer */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path,
			 strerror(errno));
		return ret;
	}
	if (fstat(fd, &st)) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot read: %s", path,
			 strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		ret = -EINVAL;
		snprintf(err, errlen,
			 "%s: not a regular file (a FIFO, device or socket); "
			 "manifests must be files",
			 path);
		goto cleanup;
	}
	if (st.st_size > DOC_MAX_BYTES) {
		ret = -EFBIG;
		snprintf(err, errlen, "%s: file larger than 16 MiB", path);
		goto cleanup;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		ret = -ENOMEM;
		snprintf(err, errlen, "%s: out of memory", path);
		goto cleanup;
	}
	/* the file may shrink or grow while we read: take what is there */
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: cannot read: %s", path,
				 strerror(errno));
			goto cleanup;
		}
		if (!n)
			break;
		got += n;
	}
	ret = doc__parse_buf(path, buf, got, out, err, errlen);
cleanup:
	free(buf);
	close(fd);
	return ret;
}

size_t doc__count(const struct doc_node *n, size_t limit)
{
	size_t c = 1;

	if (!n)
		return 0;
	if (n->kind == DOC_LIST)
		for (size_t i = 0; i < n->list.n && c <= limit; i++)
			c += doc__count(n->list.items[i], limit - c);
	else if (n->kind == DOC_MAP)
		for (size_t i = 0; i < n->map.n && c <= limit; i++)
			c += doc__count(n->map.vals[i], limit - c);
	return c;
}

void doc__free(struct doc_node *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case DOC_STRING:
		free(n->str.s);
		break;
	case DOC_LIST:
		for (size_t i = 0; i < n->list.n; i++)
			doc__free(n->list.items[i]);
		free(n->list.items);
		break;
	case DOC_MAP:
		for (size_t i = 0; i < n->map.n; i++) {
			free(n->map.keys[i]);
			doc__free(n->map.vals[i]);
		}
		free(n->map.keys);
		free(n->map.vals);
		break;
	default:
		break;
	}
	free(n);
}

void doc__free_file(struct doc_file *f)
{
	if (!f)
		return;
	for (size_t i = 0; i < f->ndocs; i++)
		doc__free(f->docs[i]);
	free(f->docs);
	free(f->path);
	free(f);
}

const struct doc_node *doc__get(const struct doc_node *n, const char *key)
{
	if (!n || n->kind != DOC_MAP)
		return NULL;
	for (size_t i = 0; i < n->map.n; i++)
		if (!strcmp(n->map.keys[i], key))
			return n->map.vals[i];
	return NULL;
}

const struct doc_node *doc__path(const struct doc_node *n, const char *path)
{
	char key[256];

	while (n && *path) {
		const char *dot = strchr(path, '.');
		size_t len = dot ? (size_t)(dot - path) : strlen(path);

		if (len >= sizeof(key))
			return NULL;
		memcpy(key, path, len);
		key[len] = 0;
		n = doc__get(n, key);
		path += len + (dot ? 1 : 0);
	}
	return n;
}

const char *doc__str(const struct doc_node *n, const char *path)
{
	n = doc__path(n, path);
	return n && n->kind == DOC_STRING ? n->str.s : NULL;
}

static struct doc_node *clone_counted(struct parser *p,
				      const struct doc_node *n, int depth)
{
	struct doc_node *c;

	if (!n || depth > DOC_MAX_DEPTH)
		return NULL;
	if (p && ++p->nodes > DOC_MAX_NODES)
		return NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	*c = *n;
	if (!p)
		c->file = NULL;
	switch (n->kind) {
	case DOC_STRING:
		c->str.s = malloc(n->str.len + 1);
		if (!c->str.s)
			goto fail;
		memcpy(c->str.s, n->str.s, n->str.len + 1);
		break;
	case DOC_LIST:
		c->list.items = calloc(n->list.n ? n->list.n : 1,
				       sizeof(*c->list.items));
		if (!c->list.items)
			goto fail;
		for (c->list.n = 0; c->list.n < n->list.n; c->list.n++) {
			c->list.items[c->list.n] = clone_counted(
				p, n->list.items[c->list.n], depth + 1);
			if (!c->list.items[c->list.n])
				goto fail;
		}
		break;
	case DOC_MAP:
		c->map.keys = calloc(n->map.n ? n->map.n : 1, sizeof(char *));
		c->map.vals =
			calloc(n->map.n ? n->map.n : 1, sizeof(*c->map.vals));
		if (!c->map.keys || !c->map.vals) {
			free(c->map.keys);
			free(c->map.vals);
			c->kind = DOC_NULL;
			goto fail;
		}
		for (c->map.n = 0; c->map.n < n->map.n; c->map.n++) {
			size_t i = c->map.n;

			c->map.keys[i] = strdup(n->map.keys[i]);
			c->map.vals[i] =
				clone_counted(p, n->map.vals[i], depth + 1);
			if (!c->map.keys[i] || !c->map.vals[i]) {
				free(c->map.keys[i]);
				doc__free(c->map.vals[i]);
				goto fail;
			}
		}
		break;
	default:
		break;
	}
	return c;
fail:
	doc__free(c);
	return NULL;
}

struct doc_node *doc__clone(const struct doc_node *n)
{
	return clone_counted(NULL, n, 0);
}

struct doc_node *doc__new_str(const char *s)
{
	struct doc_node *n = node_new(NULL, DOC_STRING, NULL);

	if (!n)
		return NULL;
	n->str.s = strdup(s);
	if (!n->str.s) {
		free(n);
		return NULL;
	}
	n->str.len = strlen(s);
	return n;
}

struct doc_node *doc__new_map(void)
{
	return node_new(NULL, DOC_MAP, NULL);
}

int doc__map_set(struct doc_node *map, const char *key, struct doc_node *val)
{
	char **keys;
	struct doc_node **vals;

	if (!map || map->kind != DOC_MAP || !val)
		return -EINVAL;
	for (size_t i = 0; i < map->map.n; i++) {
		if (!strcmp(map->map.keys[i], key)) {
			doc__free(map->map.vals[i]);
			map->map.vals[i] = val;
			return 0;
		}
	}
	keys = realloc(map->map.keys, (map->map.n + 1) * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	map->map.keys = keys;
	vals = realloc(map->map.vals, (map->map.n + 1) * sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	map->map.vals = vals;
	keys[map->map.n] = strdup(key);
	if (!keys[map->map.n])
		return -ENOMEM;
	vals[map->map.n++] = val;
	return 0;
}

const char *doc__kind_name(enum doc_kind k)
{
	static const char *const names[] = {
		[DOC_NULL] = "null",     [DOC_BOOL] = "bool",
		[DOC_INT] = "integer",   [DOC_DOUBLE] = "number",
		[DOC_STRING] = "string", [DOC_LIST] = "list",
		[DOC_MAP] = "map",
	};

	return k <= DOC_MAP ? names[k] : "?";
}
