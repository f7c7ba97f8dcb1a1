// SPDX-License-Identifier: Apache-2.0
/*
 * Typed readers for manifest fields with "file:line: what to fix" messages,
 * and the model's arena (every string and array of a gw_model lives in it,
 * so a model is freed with one call and doc trees can go right away).
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/gateway/gateway_api_fields.h"
#include "policy/source/doc_field.h"

struct gw_arena {
	struct gw_arena *next;
	size_t used, size;
	char mem[];
};

#define ARENA_CHUNK (64 * 1024)

void *gateway_api_fields__alloc(struct gw_model *m, size_t size)
{
	struct gw_arena *a = m->arena;
	void *p;

	size = (size + 15) & ~(size_t)15;
	if (!a || a->size - a->used < size) {
		size_t cap = size > ARENA_CHUNK ? size : ARENA_CHUNK;

		a = calloc(1, sizeof(*a) + cap);
		if (!a)
			return NULL;
		a->size = cap;
		a->next = m->arena;
		m->arena = a;
	}
	p = a->mem + a->used;
	a->used += size;
	return p;
}

void *gateway_api_fields__array(struct gw_model *m, size_t n, size_t size)
{
	if (n && size > SIZE_MAX / n)
		return NULL;
	return gateway_api_fields__alloc(m, n ? n * size : 1);
}

char *gateway_api_fields__strdup(struct gw_model *m, const char *s)
{
	size_t len = strlen(s);
	char *d = gateway_api_fields__alloc(m, len + 1);

	if (d)
		memcpy(d, s, len + 1);
	return d;
}

char *gateway_api_fields__lower(struct gw_model *m, const char *s)
{
	char *d = gateway_api_fields__strdup(m, s);

	for (char *c = d; c && *c; c++)
		*c = tolower((unsigned char)*c);
	return d;
}

__attribute__((format(printf, 3, 4))) int
gateway_api_fields__bad(struct gw_ctx *c, const struct doc_node *n,
			const char *fmt, ...)
{
	va_list ap;
	int off;

	off = snprintf(c->err, c->errlen, "%s:%u: ",
		       n && n->file ? n->file : (c->file ? c->file : "<doc>"),
		       n ? n->line : 0);
	if (off < 0 || (size_t)off >= c->errlen)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(c->err + off, c->errlen - off, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int gateway_api_fields__oom(struct gw_ctx *c)
{
	snprintf(c->err, c->errlen, "out of memory reading manifests");
	return -ENOMEM;
}

/*
 * Optional typed fields: absent (or null) leaves *out untouched; present
 * with the wrong type is an error naming the field.
 */
/* The typed check (doc_field) worded for Gateway API fields. */
static int typed(struct gw_ctx *c, const struct doc_node *parent,
		 const char *key, const char *what, enum doc_kind kind,
		 const struct doc_node **out)
{
	int r = doc_field__get(parent, key, kind, out);

	if (r < 0)
		return gateway_api_fields__bad(c, *out,
					       "%s.%s must be %s, not %s", what,
					       key, doc_field__want(kind),
					       doc__kind_name((*out)->kind));
	return r;
}

int gateway_api_fields__opt_str(struct gw_ctx *c, const struct doc_node *parent,
				const char *key, const char *what,
				const char **out)
{
	const struct doc_node *n;
	int r = typed(c, parent, key, what, DOC_STRING, &n);

	if (r <= 0)
		return r;
	/* "\0" in YAML: C would see a shorter, different value */
	if (strlen(n->str.s) != n->str.len)
		return gateway_api_fields__bad(
			c, n, "%s.%s contains a NUL byte", what, key);
	*out = gateway_api_fields__strdup(c->m, n->str.s);
	return *out ? 0 : gateway_api_fields__oom(c);
}

int gateway_api_fields__req_str(struct gw_ctx *c, const struct doc_node *parent,
				const char *key, const char *what,
				const char **out)
{
	int err;

	*out = NULL;
	err = gateway_api_fields__opt_str(c, parent, key, what, out);
	if (err)
		return err;
	if (!*out || !**out)
		return gateway_api_fields__bad(c, parent, "%s.%s is required",
					       what, key);
	return 0;
}

int gateway_api_fields__opt_list(struct gw_ctx *c,
				 const struct doc_node *parent, const char *key,
				 const char *what, const struct doc_node **out)
{
	int r = typed(c, parent, key, what, DOC_LIST, out);

	return r < 0 ? r : 0;
}

int gateway_api_fields__opt_map(struct gw_ctx *c, const struct doc_node *parent,
				const char *key, const char *what,
				const struct doc_node **out)
{
	int r = typed(c, parent, key, what, DOC_MAP, out);

	return r < 0 ? r : 0;
}

int gateway_api_fields__opt_port(struct gw_ctx *c,
				 const struct doc_node *parent, const char *key,
				 const char *what, uint32_t *out)
{
	const struct doc_node *n;
	int r = typed(c, parent, key, what, DOC_INT, &n);

	if (r <= 0)
		return r;
	if (n->i < 1 || n->i > 65535)
		return gateway_api_fields__bad(
			c, n, "%s.%s must be 1..65535, not %lld", what, key,
			(long long)n->i);
	*out = (uint32_t)n->i;
	return 0;
}

int gateway_api_fields__item_map(struct gw_ctx *c, const struct doc_node *n,
				 const char *what, size_t i)
{
	if (n->kind != DOC_MAP)
		return gateway_api_fields__bad(
			c, n, "%s[%zu] must be a mapping, not %s", what, i,
			doc__kind_name(n->kind));
	return 0;
}

/*
 * RFC 1123 subdomain, optionally with a leading "*." label, as the CRD's
 * Hostname pattern. Lower-cased by the caller.
 */
/*
 * The Gateway API's Hostname: RFC 1123 labels, optionally "*." first,
 * at most 253 bytes, lower-case by the time we look ("IPs are not allowed":
 * the CRD's pattern lets 127.0.0.1 through, so all-numeric labels are
 * refused here).
 */
static bool valid_hostname(const char *h)
{
	size_t len = strlen(h), label = 0;
	bool numeric = true;
	const char *p = h;

	if (!len || len > 253)
		return false;
	if (p[0] == '*') {
		if (p[1] != '.' || !p[2])
			return false;
		p += 2;
	}
	for (;; p++) {
		if (!*p || *p == '.') {
			/* empty label (".x", "x..y", "x."), or '-' at an end */
			if (!label || label > 63 || p[-1] == '-')
				return false;
			if (!*p)
				break;
			label = 0;
			continue;
		}
		if (!(islower((unsigned char)*p) ||
		      isdigit((unsigned char)*p) || *p == '-'))
			return false;
		if (*p == '-' && !label)
			return false;
		if (!isdigit((unsigned char)*p))
			numeric = false;
		label++;
	}
	return !numeric;
}

int gateway_api_fields__hostname(struct gw_ctx *c, const struct doc_node *n,
				 const char *what, const char **out)
{
	if (n->kind != DOC_STRING)
		return gateway_api_fields__bad(c, n,
					       "%s must be a string, not %s",
					       what, doc__kind_name(n->kind));
	if (strlen(n->str.s) != n->str.len)
		return gateway_api_fields__bad(c, n, "%s contains a NUL byte",
					       what);
	*out = gateway_api_fields__lower(c->m, n->str.s);
	if (!*out)
		return gateway_api_fields__oom(c);
	if (!valid_hostname(*out))
		return gateway_api_fields__bad(
			c, n,
			"%s \"%s\" is not a hostname (RFC 1123 labels, "
			"optionally starting with \"*.\"; no IPs, no port)",
			what, n->str.s);
	return 0;
}

int gateway_api_fields__max_items(struct gw_ctx *c, const struct doc_node *list,
				  size_t max, const char *field)
{
	if (!list || list->kind != DOC_LIST || list->list.n <= max)
		return 0;
	return gateway_api_fields__bad(
		c, list,
		"%s has %zu items; the Gateway API allows at most %zu "
		"(maxItems in its CRD)",
		field, list->list.n, max);
}

int gateway_api_fields__compile_re(struct gw_ctx *c, const struct doc_node *n,
				   const char *pattern, struct regex **out)
{
	struct regex *re, **grown;
	char msg[256];
	int rc;

	/*
	 * Each compiled pattern may take up to REGEX_MAX_MEM once traffic
	 * fills its DFA cache; the CRD would allow 128 matches of 33 regexes.
	 */
	if (++c->nregexes > GW_MAX_OBJECT_REGEXES)
		return gateway_api_fields__bad(
			c, n,
			"more than %d RegularExpression matches in one object "
			"(milometer's limit: each one holds memory)",
			GW_MAX_OBJECT_REGEXES);
	/*
	 * RE2 as Envoy uses it; the whole value must match (FullMatch), so
	 * the pattern needs no anchors. regex.h says what bounds compilation.
	 */
	rc = regex__compile(pattern, strlen(pattern), &re, msg, sizeof(msg));
	if (rc == -ENOMEM)
		return gateway_api_fields__oom(c);
	if (rc)
		return gateway_api_fields__bad(
			c, n,
			"invalid regular expression: %s; the pattern: \"%.200s%s\"",
			msg, pattern, strlen(pattern) > 200 ? "..." : "");
	grown = realloc(c->m->regexes, (c->m->nregexes + 1) * sizeof(*grown));
	if (!grown) {
		regex__free(re);
		return gateway_api_fields__oom(c);
	}
	c->m->regexes = grown;
	grown[c->m->nregexes++] = re;
	*out = re;
	return 0;
}

int gateway_api_fields__metadata(struct gw_ctx *c, const struct doc_node *root,
				 const char *kind, const char **ns,
				 const char **name)
{
	const struct doc_node *md;
	int err;

	err = gateway_api_fields__opt_map(c, root, "metadata", kind, &md);
	if (err)
		return err;
	if (!md)
		return gateway_api_fields__bad(
			c, root, "%s: metadata.name is required", kind);
	err = gateway_api_fields__req_str(c, md, "name", "metadata", name);
	if (err)
		return err;
	*ns = "default";
	return gateway_api_fields__opt_str(c, md, "namespace", "metadata", ns);
}

void gateway_api_fields__arena_free(struct gw_arena *a)
{
	struct gw_arena *next;

	for (; a; a = next) {
		next = a->next;
		free(a);
	}
}
