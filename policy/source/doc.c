// SPDX-License-Identifier: Apache-2.0
/*
 * YAML (libyaml event API) -> doc_node trees with file/line for messages.
 * Scalars resolve with YAML 1.2's core schema; aliases are expanded by
 * deep copy and count against DOC_MAX_NODES, so "billion laughs" documents
 * fail with a message instead of exhausting memory.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "policy/source/doc.h"

struct anchor {
	char *name;
	struct doc_node *node;
};

struct parser {
	yaml_parser_t yp;
	const char *file;
	size_t nodes;
	struct anchor *anchors;
	size_t nanchors;
	char *err;
	size_t errlen;
};

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

static struct doc_node *clone_counted(struct parser *p, const struct doc_node *n,
				      int depth);

static int remember_anchor(struct parser *p, const yaml_char_t *name,
			   struct doc_node *n)
{
	struct anchor *a;

	if (!name)
		return 0;
	a = realloc(p->anchors, (p->nanchors + 1) * sizeof(*a));
	if (!a)
		return -ENOMEM;
	p->anchors = a;
	a[p->nanchors].name = strdup((const char *)name);
	if (!a[p->nanchors].name)
		return -ENOMEM;
	a[p->nanchors++].node = n;
	return 0;
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
	yaml_event_type_t end = n->kind == DOC_LIST ? YAML_SEQUENCE_END_EVENT :
						      YAML_MAPPING_END_EVENT;
	int err;

	for (;;) {
		struct doc_node *key = NULL, *val = NULL;

		err = next_event(p, &ev);
		if (err)
			return err;
		if (ev.type == end) {
			yaml_event_delete(&ev);
			return 0;
		}
		err = parse_node(p, &ev, depth + 1, n->kind == DOC_LIST ? &val : &key);
		if (err)
			return err;
		if (n->kind == DOC_LIST) {
			void *items = realloc(n->list.items,
					      (n->list.n + 1) * sizeof(val));
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
				snprintf(buf, sizeof(buf), "%lld", (long long)key->i);
			else if (key->kind == DOC_BOOL)
				ks = key->b ? "true" : "false";
			else if (key->kind == DOC_DOUBLE)
				snprintf(buf, sizeof(buf), "%g", key->d);
			else
				ks = "null";
			if (doc__get(n, ks)) {
				char msg[200];

				snprintf(msg, sizeof(msg),
					 "duplicate key \"%.120s\"", ks);
				err = fail(p, key->line, key->col, msg);
				doc__free(key);
				doc__free(val);
				return err;
			}
			keys = realloc(n->map.keys, (n->map.n + 1) * sizeof(*keys));
			if (keys)
				n->map.keys = keys;
			vals = realloc(n->map.vals, (n->map.n + 1) * sizeof(*vals));
			if (vals)
				n->map.vals = vals;
			if (!keys || !vals || !(keys[n->map.n] = strdup(ks))) {
				doc__free(key);
				doc__free(val);
				return -ENOMEM;
			}
			n->map.vals[n->map.n++] = val;
			doc__free(key);
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
		err = fail(p, ev->start_mark.line + 1, ev->start_mark.column + 1,
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
		const yaml_char_t *anchor = seq ? ev->data.sequence_start.anchor :
						  ev->data.mapping_start.anchor;

		n = node_new(p, seq ? DOC_LIST : DOC_MAP, &ev->start_mark);
		if (!n)
			break;
		err = parse_children(p, n, depth);
		if (!err)
			err = remember_anchor(p, anchor, n);
		break;
	}
	case YAML_ALIAS_EVENT:
		for (size_t i = p->nanchors; i-- > 0;) {
			if (!strcmp(p->anchors[i].name,
				    (const char *)ev->data.alias.anchor)) {
				n = clone_counted(p, p->anchors[i].node, depth);
				break;
			}
		}
		if (!n && p->nodes <= DOC_MAX_NODES) {
			err = fail(p, ev->start_mark.line + 1,
				   ev->start_mark.column + 1,
				   "alias to an unknown anchor");
			goto cleanup;
		}
		break;
	default:
		err = fail(p, ev->start_mark.line + 1, ev->start_mark.column + 1,
			   "unexpected YAML event");
		goto cleanup;
	}
	if (!n && !err) {
		err = p->nodes > DOC_MAX_NODES ?
			      fail(p, ev->start_mark.line + 1,
				   ev->start_mark.column + 1,
				   "document too large (more than 1048576 nodes)") :
			      -ENOMEM;
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

			yaml_event_delete(&ev);
			err = next_event(p, &ev);
			if (err)
				return err;
			if (ev.type == YAML_DOCUMENT_END_EVENT) {
				/* empty document between "---" lines */
				yaml_event_delete(&ev);
				continue;
			}
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
				doc__free(root);
				continue;
			}
			docs = realloc(f->docs, (f->ndocs + 1) * sizeof(*docs));
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
	for (size_t i = 0; i < p.nanchors; i++)
		free(p.anchors[i].name);
	free(p.anchors);
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
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	long sz;
	int ret;

	*out = NULL;
	if (!fp) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return ret;
	}
	if (fseek(fp, 0, SEEK_END) || (sz = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET)) {
		ret = -EIO;
		snprintf(err, errlen, "%s: cannot read", path);
		goto cleanup;
	}
	if (sz > DOC_MAX_BYTES) {
		ret = -EFBIG;
		snprintf(err, errlen, "%s: file larger than 16 MiB", path);
		goto cleanup;
	}
	buf = malloc(sz + 1);
	if (!buf) {
		ret = -ENOMEM;
		goto cleanup;
	}
	if (fread(buf, 1, sz, fp) != (size_t)sz) {
		ret = -EIO;
		snprintf(err, errlen, "%s: short read", path);
		goto cleanup;
	}
	ret = doc__parse_buf(path, buf, sz, out, err, errlen);
cleanup:
	free(buf);
	fclose(fp);
	return ret;
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

static struct doc_node *clone_counted(struct parser *p, const struct doc_node *n,
				      int depth)
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
		c->list.items = calloc(n->list.n ? n->list.n : 1, sizeof(*c->list.items));
		if (!c->list.items)
			goto fail;
		for (c->list.n = 0; c->list.n < n->list.n; c->list.n++) {
			c->list.items[c->list.n] =
				clone_counted(p, n->list.items[c->list.n], depth + 1);
			if (!c->list.items[c->list.n])
				goto fail;
		}
		break;
	case DOC_MAP:
		c->map.keys = calloc(n->map.n ? n->map.n : 1, sizeof(char *));
		c->map.vals = calloc(n->map.n ? n->map.n : 1, sizeof(*c->map.vals));
		if (!c->map.keys || !c->map.vals) {
			free(c->map.keys);
			free(c->map.vals);
			c->kind = DOC_NULL;
			goto fail;
		}
		for (c->map.n = 0; c->map.n < n->map.n; c->map.n++) {
			size_t i = c->map.n;

			c->map.keys[i] = strdup(n->map.keys[i]);
			c->map.vals[i] = clone_counted(p, n->map.vals[i], depth + 1);
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
		[DOC_NULL] = "null",	 [DOC_BOOL] = "bool",
		[DOC_INT] = "integer",	 [DOC_DOUBLE] = "number",
		[DOC_STRING] = "string", [DOC_LIST] = "list",
		[DOC_MAP] = "map",
	};

	return k <= DOC_MAP ? names[k] : "?";
}
