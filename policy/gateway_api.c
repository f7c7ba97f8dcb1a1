// SPDX-License-Identifier: Apache-2.0
/*
 * Gateway and HTTPRoute manifests -> struct gw_model. Everything is copied
 * into one arena owned by the model, so doc trees can be freed right after
 * gateway_api__add_doc() and the model is released with one call.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bpf/milometer.h"
#include "policy/gateway_api.h"

struct gw_arena {
	struct gw_arena *next;
	size_t used, size;
	char mem[];
};

#define ARENA_CHUNK (64 * 1024)

static void *arena_alloc(struct gw_model *m, size_t size)
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

static void *arena_array(struct gw_model *m, size_t n, size_t size)
{
	if (n && size > SIZE_MAX / n)
		return NULL;
	return arena_alloc(m, n ? n * size : 1);
}

static char *arena_strdup(struct gw_model *m, const char *s)
{
	size_t len = strlen(s);
	char *d = arena_alloc(m, len + 1);

	if (d)
		memcpy(d, s, len + 1);
	return d;
}

static char *arena_lower(struct gw_model *m, const char *s)
{
	char *d = arena_strdup(m, s);

	for (char *c = d; c && *c; c++)
		*c = tolower((unsigned char)*c);
	return d;
}

struct gw_model *gateway_api__new(void)
{
	return calloc(1, sizeof(struct gw_model));
}

void gateway_api__free(struct gw_model *m)
{
	struct gw_arena *a, *next;

	if (!m)
		return;
	for (size_t i = 0; i < m->nregexes; i++) {
		regfree(m->regexes[i]);
		free(m->regexes[i]);
	}
	free(m->regexes);
	free(m->gateways);
	free(m->routes);
	for (a = m->arena; a; a = next) {
		next = a->next;
		free(a);
	}
	free(m);
}

/* Parsing context: the model, where messages go, and the file name. */
struct ctx {
	struct gw_model *m;
	char *err;
	size_t errlen;
	const char *file;
};

__attribute__((format(printf, 3, 4)))
static int bad(struct ctx *c, const struct doc_node *n, const char *fmt, ...)
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

static int oom(struct ctx *c)
{
	snprintf(c->err, c->errlen, "out of memory reading manifests");
	return -ENOMEM;
}

/*
 * Optional typed fields: absent (or null) leaves *out untouched; present
 * with the wrong type is an error naming the field.
 */
static int opt_str(struct ctx *c, const struct doc_node *parent,
		   const char *key, const char *what, const char **out)
{
	const struct doc_node *n = doc__get(parent, key);

	if (!n || n->kind == DOC_NULL)
		return 0;
	if (n->kind != DOC_STRING)
		return bad(c, n, "%s.%s must be a string, not %s", what, key,
			   doc__kind_name(n->kind));
	*out = arena_strdup(c->m, n->str.s);
	return *out ? 0 : oom(c);
}

static int req_str(struct ctx *c, const struct doc_node *parent,
		   const char *key, const char *what, const char **out)
{
	int err;

	*out = NULL;
	err = opt_str(c, parent, key, what, out);
	if (err)
		return err;
	if (!*out || !**out)
		return bad(c, parent, "%s.%s is required", what, key);
	return 0;
}

static int opt_list(struct ctx *c, const struct doc_node *parent,
		    const char *key, const char *what,
		    const struct doc_node **out)
{
	const struct doc_node *n = doc__get(parent, key);

	*out = NULL;
	if (!n || n->kind == DOC_NULL)
		return 0;
	if (n->kind != DOC_LIST)
		return bad(c, n, "%s.%s must be a list, not %s", what, key,
			   doc__kind_name(n->kind));
	*out = n;
	return 0;
}

static int opt_map(struct ctx *c, const struct doc_node *parent,
		   const char *key, const char *what,
		   const struct doc_node **out)
{
	const struct doc_node *n = doc__get(parent, key);

	*out = NULL;
	if (!n || n->kind == DOC_NULL)
		return 0;
	if (n->kind != DOC_MAP)
		return bad(c, n, "%s.%s must be a mapping, not %s", what, key,
			   doc__kind_name(n->kind));
	*out = n;
	return 0;
}

static int opt_port(struct ctx *c, const struct doc_node *parent,
		    const char *key, const char *what, uint32_t *out)
{
	const struct doc_node *n = doc__get(parent, key);

	if (!n || n->kind == DOC_NULL)
		return 0;
	if (n->kind != DOC_INT)
		return bad(c, n, "%s.%s must be an integer, not %s", what, key,
			   doc__kind_name(n->kind));
	if (n->i < 1 || n->i > 65535)
		return bad(c, n, "%s.%s must be 1..65535, not %lld", what, key,
			   (long long)n->i);
	*out = (uint32_t)n->i;
	return 0;
}

static int item_map(struct ctx *c, const struct doc_node *n, const char *what,
		    size_t i)
{
	if (n->kind != DOC_MAP)
		return bad(c, n, "%s[%zu] must be a mapping, not %s", what, i,
			   doc__kind_name(n->kind));
	return 0;
}

/*
 * RFC 1123 subdomain, optionally with a leading "*." label, as the CRD's
 * Hostname pattern. Lower-cased by the caller.
 */
static bool valid_hostname(const char *h)
{
	size_t len = strlen(h);
	const char *p = h;

	if (!len || len > 253)
		return false;
	if (p[0] == '*') {
		if (p[1] != '.' || !p[2])
			return false;
		p += 2;
	}
	for (; *p; p++) {
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.'))
			return false;
	}
	return h[len - 1] != '.' && h[len - 1] != '-';
}

static int hostname(struct ctx *c, const struct doc_node *n, const char *what,
		    const char **out)
{
	if (n->kind != DOC_STRING)
		return bad(c, n, "%s must be a string, not %s", what,
			   doc__kind_name(n->kind));
	*out = arena_lower(c->m, n->str.s);
	if (!*out)
		return oom(c);
	if (!valid_hostname(*out))
		return bad(c, n,
			   "%s \"%s\" is not a hostname (RFC 1123 labels, "
			   "optionally starting with \"*.\"; no IPs, no port)",
			   what, n->str.s);
	return 0;
}

static int compile_re(struct ctx *c, const struct doc_node *n,
		      const char *pattern, regex_t **out)
{
	size_t len = strlen(pattern);
	char *anchored = malloc(len + 5);
	regex_t *re = calloc(1, sizeof(*re));
	regex_t **grown;
	char msg[128];
	int rc;

	if (!anchored || !re)
		goto nomem;
	/* Envoy matches the whole value (RE2 full match); anchor to agree. */
	snprintf(anchored, len + 5, "^(%s)$", pattern);
	rc = regcomp(re, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	anchored = NULL;
	if (rc) {
		regerror(rc, re, msg, sizeof(msg));
		free(re);
		return bad(c, n, "regular expression \"%s\": %s", pattern,
			   msg);
	}
	grown = realloc(c->m->regexes,
			(c->m->nregexes + 1) * sizeof(*grown));
	if (!grown) {
		regfree(re);
		goto nomem;
	}
	c->m->regexes = grown;
	grown[c->m->nregexes++] = re;
	*out = re;
	return 0;
nomem:
	free(anchored);
	free(re);
	return oom(c);
}

static int kv_matches(struct ctx *c, const struct doc_node *list,
		      const char *what, bool fold_names,
		      struct gw_kv_match **out, size_t *nout)
{
	struct gw_kv_match *kv;
	size_t n = 0;
	int err;

	*out = NULL;
	*nout = 0;
	if (!list)
		return 0;
	kv = arena_array(c->m, list->list.n, sizeof(*kv));
	if (!kv)
		return oom(c);
	for (size_t i = 0; i < list->list.n; i++) {
		const struct doc_node *it = list->list.items[i];
		const char *type = "Exact", *name, *value;
		bool dup = false;

		err = item_map(c, it, what, i);
		if (!err)
			err = req_str(c, it, "name", what, &name);
		if (!err)
			err = opt_str(c, it, "type", what, &type);
		if (!err) {
			value = NULL;
			err = opt_str(c, it, "value", what, &value);
			if (!err && !value)
				err = bad(c, it, "%s.value is required", what);
		}
		if (err)
			return err;
		if (fold_names)
			for (char *p = (char *)name; *p; p++)
				*p = tolower((unsigned char)*p);
		/*
		 * "If multiple entries specify equivalent header names, only
		 * the first entry with an equivalent name MUST be considered"
		 * (same for query params): later duplicates are dropped and
		 * do not count towards the match-count precedence.
		 */
		for (size_t j = 0; j < n; j++)
			dup |= !strcmp(kv[j].name, name);
		if (dup)
			continue;
		kv[n].name = name;
		kv[n].value = value;
		if (!strcmp(type, "Exact")) {
			kv[n].type = GW_VALUE_EXACT;
		} else if (!strcmp(type, "RegularExpression")) {
			kv[n].type = GW_VALUE_REGEX;
			err = compile_re(c, it, value, &kv[n].re);
			if (err)
				return err;
		} else {
			return bad(c, it,
				   "%s.type \"%s\": use Exact or "
				   "RegularExpression", what, type);
		}
		n++;
	}
	*out = kv;
	*nout = n;
	return 0;
}

static bool ends_with(const char *s, const char *sfx)
{
	size_t n = strlen(s), m = strlen(sfx);

	return n >= m && !strcmp(s + n - m, sfx);
}

static int path_match(struct ctx *c, const struct doc_node *mn,
		      struct gw_match *gm)
{
	const struct doc_node *p;
	const char *type = "PathPrefix", *value = "/";
	int err;

	err = opt_map(c, mn, "path", "match", &p);
	if (err)
		return err;
	if (p) {
		err = opt_str(c, p, "type", "path", &type);
		if (!err)
			err = opt_str(c, p, "value", "path", &value);
		if (err)
			return err;
	}
	gm->path = value;
	if (!strcmp(type, "Exact")) {
		gm->path_type = GW_PATH_EXACT;
	} else if (!strcmp(type, "PathPrefix")) {
		gm->path_type = GW_PATH_PREFIX;
	} else if (!strcmp(type, "RegularExpression")) {
		gm->path_type = GW_PATH_REGEX;
		return compile_re(c, p, value, &gm->path_re);
	} else {
		return bad(c, p, "path.type \"%s\": use Exact, PathPrefix or "
			   "RegularExpression", type);
	}
	if (value[0] != '/')
		return bad(c, p, "path.value \"%s\" must start with '/'",
			   value);
	/*
	 * The CRD's validations (httproute_types.go): a client never sends
	 * such a path to a proxy that normalises, so it could never match.
	 */
	if (strstr(value, "//") || strstr(value, "/./") ||
	    strstr(value, "/../") || strcasestr(value, "%2f") ||
	    strchr(value, '?') || strchr(value, '#') ||
	    ends_with(value, "/..") || ends_with(value, "/."))
		return bad(c, p, "path.value \"%s\" must not contain '//', "
			   "'/./', '/../', '%%2F', '?' or '#', nor end in "
			   "'/.' or '/..'", value);
	return 0;
}

static int one_match(struct ctx *c, const struct doc_node *mn,
		     struct gw_match *gm)
{
	const struct doc_node *hl, *ql;
	const char *method = NULL;
	int err;

	gm->line = mn ? mn->line : 0;
	gm->method = MM_M_ANY;
	gm->path_type = GW_PATH_PREFIX;
	gm->path = "/";
	if (!mn)
		return 0;
	err = path_match(c, mn, gm);
	if (!err)
		err = opt_str(c, mn, "method", "match", &method);
	if (err)
		return err;
	if (method) {
		gm->method = gateway_api__method(method, strlen(method));
		if (gm->method == MM_M_OTHER)
			return bad(c, doc__get(mn, "method"),
				   "match.method \"%s\": use GET, HEAD, POST, "
				   "PUT, DELETE, CONNECT, OPTIONS, TRACE or "
				   "PATCH", method);
	}
	err = opt_list(c, mn, "headers", "match", &hl);
	if (!err)
		err = kv_matches(c, hl, "headers", true, &gm->headers,
				 &gm->nheaders);
	if (!err)
		err = opt_list(c, mn, "queryParams", "match", &ql);
	if (!err)
		err = kv_matches(c, ql, "queryParams", false, &gm->query,
				 &gm->nquery);
	return err;
}

static int backends(struct ctx *c, const struct gw_route *r,
		    const struct doc_node *rn, struct gw_rule *gr)
{
	const struct doc_node *bl;
	int err;

	err = opt_list(c, rn, "backendRefs", "rule", &bl);
	if (err || !bl)
		return err;
	gr->backends = arena_array(c->m, bl->list.n, sizeof(*gr->backends));
	if (!gr->backends)
		return oom(c);
	for (size_t i = 0; i < bl->list.n; i++) {
		const struct doc_node *b = bl->list.items[i];
		const struct doc_node *w;
		struct gw_backend *gb = &gr->backends[i];

		gb->ns = r->ns;
		gb->weight = 1;
		err = item_map(c, b, "backendRefs", i);
		if (!err)
			err = req_str(c, b, "name", "backendRef", &gb->name);
		if (!err)
			err = opt_str(c, b, "namespace", "backendRef",
				      &gb->ns);
		if (!err)
			err = opt_port(c, b, "port", "backendRef", &gb->port);
		if (err)
			return err;
		w = doc__get(b, "weight");
		if (w && w->kind != DOC_NULL) {
			if (w->kind != DOC_INT || w->i < 0 || w->i > 1000000)
				return bad(c, w, "backendRef.weight must be "
					   "an integer 0..1000000");
			gb->weight = (uint32_t)w->i;
		}
	}
	gr->nbackends = bl->list.n;
	return 0;
}

static int rules(struct ctx *c, struct gw_route *r, const struct doc_node *spec)
{
	const struct doc_node *rl;
	int err;

	err = opt_list(c, spec, "rules", "spec", &rl);
	if (err)
		return err;
	/* CRD default: one rule matching PathPrefix "/". */
	r->nrules = rl ? rl->list.n : 1;
	r->rules = arena_array(c->m, r->nrules, sizeof(*r->rules));
	if (!r->rules)
		return oom(c);
	for (size_t i = 0; i < r->nrules; i++) {
		const struct doc_node *rn = rl ? rl->list.items[i] : NULL;
		const struct doc_node *ml = NULL;
		struct gw_rule *gr = &r->rules[i];

		if (rn) {
			err = item_map(c, rn, "rules", i);
			if (!err)
				err = opt_list(c, rn, "matches", "rule", &ml);
			if (!err)
				err = backends(c, r, rn, gr);
			if (err)
				return err;
			gr->line = rn->line;
		}
		/* A rule without matches matches PathPrefix "/". */
		gr->nmatches = ml && ml->list.n ? ml->list.n : 1;
		gr->matches = arena_array(c->m, gr->nmatches,
					  sizeof(*gr->matches));
		if (!gr->matches)
			return oom(c);
		for (size_t j = 0; j < gr->nmatches; j++) {
			const struct doc_node *mn = NULL;

			if (ml && ml->list.n) {
				mn = ml->list.items[j];
				err = item_map(c, mn, "matches", j);
				if (err)
					return err;
			}
			err = one_match(c, mn, &gr->matches[j]);
			if (err)
				return err;
			if (!mn)
				gr->matches[j].line = gr->line;
		}
	}
	return 0;
}

static int parent_refs(struct ctx *c, struct gw_route *r,
		       const struct doc_node *spec)
{
	const struct doc_node *pl;
	int err;

	err = opt_list(c, spec, "parentRefs", "spec", &pl);
	if (err || !pl)
		return err;
	r->parents = arena_array(c->m, pl->list.n, sizeof(*r->parents));
	if (!r->parents)
		return oom(c);
	for (size_t i = 0; i < pl->list.n; i++) {
		const struct doc_node *p = pl->list.items[i];
		struct gw_parent_ref *pr = &r->parents[i];

		pr->group = GW_GROUP;
		pr->kind = "Gateway";
		pr->ns = r->ns;
		err = item_map(c, p, "parentRefs", i);
		if (!err)
			err = req_str(c, p, "name", "parentRef", &pr->name);
		if (!err)
			err = opt_str(c, p, "group", "parentRef", &pr->group);
		if (!err)
			err = opt_str(c, p, "kind", "parentRef", &pr->kind);
		if (!err)
			err = opt_str(c, p, "namespace", "parentRef", &pr->ns);
		if (!err)
			err = opt_str(c, p, "sectionName", "parentRef",
				      &pr->section);
		if (!err)
			err = opt_port(c, p, "port", "parentRef", &pr->port);
		if (err)
			return err;
	}
	r->nparents = pl->list.n;
	return 0;
}

/* RFC 3339 as the API server writes it: 2024-05-01T10:00:00Z. */
static int parse_time(const char *s, int64_t *out)
{
	struct tm tm = { 0 };
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	long off = 0;

	if (!p)
		return -EINVAL;
	if (*p == '.')
		for (p++; isdigit((unsigned char)*p); p++)
			;
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int hh, mm, used = 0;

		if (sscanf(p + 1, "%2d:%2d%n", &hh, &mm, &used) != 2 ||
		    used != 5)
			return -EINVAL;
		off = (hh * 60L + mm) * 60L * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*out = (int64_t)timegm(&tm) - off;
	return 0;
}

static int metadata(struct ctx *c, const struct doc_node *root,
		    const char *kind, const char **ns, const char **name)
{
	const struct doc_node *md;
	int err;

	err = opt_map(c, root, "metadata", kind, &md);
	if (err)
		return err;
	if (!md)
		return bad(c, root, "%s: metadata.name is required", kind);
	err = req_str(c, md, "name", "metadata", name);
	if (err)
		return err;
	*ns = "default";
	return opt_str(c, md, "namespace", "metadata", ns);
}

static int add_route(struct ctx *c, const struct doc_node *root)
{
	struct gw_route *r = arena_alloc(c->m, sizeof(*r));
	const struct doc_node *spec, *hl, *md;
	struct gw_route **grown;
	int err;

	if (!r)
		return oom(c);
	r->file = c->file;
	r->line = root->line;
	r->uid = "";
	err = metadata(c, root, "HTTPRoute", &r->ns, &r->name);
	if (err)
		return err;
	md = doc__get(root, "metadata");
	err = opt_str(c, md, "uid", "metadata", &r->uid);
	if (!err)
		err = opt_str(c, md, "creationTimestamp", "metadata",
			      &r->created);
	if (err)
		return err;
	if (r->created && parse_time(r->created, &r->created_s))
		return bad(c, doc__get(md, "creationTimestamp"),
			   "metadata.creationTimestamp \"%s\" is not RFC 3339 "
			   "(2024-05-01T10:00:00Z)", r->created);
	err = opt_map(c, root, "spec", "HTTPRoute", &spec);
	if (err)
		return err;
	if (!spec)
		return bad(c, root, "HTTPRoute %s/%s: spec is required", r->ns,
			   r->name);
	err = opt_list(c, spec, "hostnames", "spec", &hl);
	if (err)
		return err;
	if (hl) {
		r->hostnames = arena_array(c->m, hl->list.n,
					   sizeof(*r->hostnames));
		if (!r->hostnames)
			return oom(c);
		for (size_t i = 0; i < hl->list.n; i++) {
			err = hostname(c, hl->list.items[i], "spec.hostnames[]",
				       &r->hostnames[i]);
			if (err)
				return err;
		}
		r->nhostnames = hl->list.n;
	}
	err = parent_refs(c, r, spec);
	if (!err)
		err = rules(c, r, spec);
	if (err)
		return err;
	for (size_t i = 0; i < c->m->nroutes; i++)
		if (!strcmp(c->m->routes[i]->ns, r->ns) &&
		    !strcmp(c->m->routes[i]->name, r->name)) {
			bad(c, root, "HTTPRoute %s/%s is already defined at "
			    "%s:%u", r->ns, r->name, c->m->routes[i]->file,
			    c->m->routes[i]->line);
			return -EEXIST;
		}
	grown = realloc(c->m->routes, (c->m->nroutes + 1) * sizeof(*grown));
	if (!grown)
		return oom(c);
	c->m->routes = grown;
	grown[c->m->nroutes++] = r;
	return 0;
}

static int allowed_routes(struct ctx *c, const struct doc_node *ln,
			  struct gw_listener *l)
{
	const struct doc_node *ar, *ns, *kinds;
	const char *from = "Same";
	int err;

	l->from = GW_FROM_SAME;
	l->allows_httproute = true;
	err = opt_map(c, ln, "allowedRoutes", "listener", &ar);
	if (err || !ar)
		return err;
	err = opt_map(c, ar, "namespaces", "allowedRoutes", &ns);
	if (!err && ns)
		err = opt_str(c, ns, "from", "namespaces", &from);
	if (!err)
		err = opt_list(c, ar, "kinds", "allowedRoutes", &kinds);
	if (err)
		return err;
	if (!strcmp(from, "All"))
		l->from = GW_FROM_ALL;
	else if (!strcmp(from, "Selector"))
		l->from = GW_FROM_SELECTOR;
	else if (strcmp(from, "Same"))
		return bad(c, ns, "namespaces.from \"%s\": use Same, All or "
			   "Selector", from);
	if (kinds && kinds->list.n) {
		l->allows_httproute = false;
		for (size_t i = 0; i < kinds->list.n; i++) {
			const char *k = doc__str(kinds->list.items[i], "kind");
			const char *g = doc__str(kinds->list.items[i], "group");

			if (k && !strcmp(k, "HTTPRoute") &&
			    (!g || !strcmp(g, GW_GROUP)))
				l->allows_httproute = true;
		}
	}
	return 0;
}

static int add_gateway(struct ctx *c, const struct doc_node *root)
{
	struct gw_gateway *g = arena_alloc(c->m, sizeof(*g));
	const struct doc_node *spec, *ll;
	struct gw_gateway **grown;
	int err;

	if (!g)
		return oom(c);
	g->file = c->file;
	g->line = root->line;
	err = metadata(c, root, "Gateway", &g->ns, &g->name);
	if (!err)
		err = opt_map(c, root, "spec", "Gateway", &spec);
	if (err)
		return err;
	if (!spec)
		return bad(c, root, "Gateway %s/%s: spec is required", g->ns,
			   g->name);
	err = opt_list(c, spec, "listeners", "spec", &ll);
	if (err)
		return err;
	if (!ll || !ll->list.n)
		return bad(c, spec, "Gateway %s/%s: spec.listeners needs at "
			   "least one listener", g->ns, g->name);
	g->listeners = arena_array(c->m, ll->list.n, sizeof(*g->listeners));
	if (!g->listeners)
		return oom(c);
	for (size_t i = 0; i < ll->list.n; i++) {
		const struct doc_node *ln = ll->list.items[i], *h;
		struct gw_listener *l = &g->listeners[i];

		err = item_map(c, ln, "listeners", i);
		if (!err)
			err = req_str(c, ln, "name", "listener", &l->name);
		if (!err)
			err = req_str(c, ln, "protocol", "listener",
				      &l->protocol);
		if (!err)
			err = opt_port(c, ln, "port", "listener", &l->port);
		if (!err && !l->port)
			err = bad(c, ln, "listener.port is required");
		if (err)
			return err;
		h = doc__get(ln, "hostname");
		if (h && h->kind != DOC_NULL) {
			err = hostname(c, h, "listener.hostname", &l->hostname);
			if (err)
				return err;
		}
		err = allowed_routes(c, ln, l);
		if (err)
			return err;
		for (size_t j = 0; j < i; j++)
			if (!strcmp(g->listeners[j].name, l->name))
				return bad(c, ln, "listener name \"%s\" is "
					   "used twice", l->name);
	}
	g->nlisteners = ll->list.n;
	if (gateway_api__gateway(c->m, g->ns, g->name)) {
		bad(c, root, "Gateway %s/%s is defined twice", g->ns, g->name);
		return -EEXIST;
	}
	grown = realloc(c->m->gateways,
			(c->m->ngateways + 1) * sizeof(*grown));
	if (!grown)
		return oom(c);
	c->m->gateways = grown;
	grown[c->m->ngateways++] = g;
	return 0;
}

int gateway_api__add_doc(struct gw_model *m, const struct doc_node *root,
			 char *err, size_t errlen)
{
	struct ctx c = { .m = m, .err = err, .errlen = errlen };
	const char *api, *kind;

	if (!root || root->kind == DOC_NULL)
		return 0; /* an empty "---" document */
	c.file = root->file ? arena_strdup(m, root->file) : "<doc>";
	if (!c.file)
		return oom(&c);
	if (root->kind != DOC_MAP)
		return bad(&c, root, "a manifest must be a mapping, not %s",
			   doc__kind_name(root->kind));
	api = doc__str(root, "apiVersion");
	kind = doc__str(root, "kind");
	if (!api || !kind)
		return bad(&c, root, "manifest needs string apiVersion and "
			   "kind");
	if (strncmp(api, GW_GROUP "/", sizeof(GW_GROUP))) {
		m->skipped++;
		return 0;
	}
	if (!strcmp(kind, "HTTPRoute"))
		return add_route(&c, root);
	if (!strcmp(kind, "Gateway"))
		return add_gateway(&c, root);
	m->skipped++;
	return 0;
}

static int yaml_name(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	if (d->d_name[0] == '.')
		return 0;
	return (len > 5 && !strcmp(d->d_name + len - 5, ".yaml")) ||
	       (len > 4 && !strcmp(d->d_name + len - 4, ".yml"));
}

int gateway_api__load_dir(struct gw_model *m, const char *dir, char *err,
			  size_t errlen)
{
	struct dirent **names = NULL;
	int n, ret = 0, i;

	n = scandir(dir, &names, yaml_name, alphasort);
	if (n < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot read manifest directory: %s",
			 dir, strerror(errno));
		return ret;
	}
	for (i = 0; i < n && !ret; i++) {
		struct doc_file *f = NULL;
		char *path;

		if (asprintf(&path, "%s/%s", dir, names[i]->d_name) < 0) {
			ret = -ENOMEM;
			snprintf(err, errlen, "out of memory");
			break;
		}
		ret = doc__parse_file(path, &f, err, errlen);
		free(path);
		for (size_t d = 0; !ret && d < f->ndocs; d++)
			ret = gateway_api__add_doc(m, f->docs[d], err, errlen);
		doc__free_file(f);
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

const struct gw_gateway *gateway_api__gateway(const struct gw_model *m,
					      const char *ns, const char *name)
{
	for (size_t i = 0; i < m->ngateways; i++)
		if (!strcmp(m->gateways[i]->ns, ns) &&
		    !strcmp(m->gateways[i]->name, name))
			return m->gateways[i];
	return NULL;
}

static const char *const method_names[MM_M__COUNT] = {
	[MM_M_OTHER] = "OTHER",     [MM_M_GET] = "GET",
	[MM_M_HEAD] = "HEAD",       [MM_M_POST] = "POST",
	[MM_M_PUT] = "PUT",         [MM_M_DELETE] = "DELETE",
	[MM_M_CONNECT] = "CONNECT", [MM_M_OPTIONS] = "OPTIONS",
	[MM_M_TRACE] = "TRACE",     [MM_M_PATCH] = "PATCH",
};

uint8_t gateway_api__method(const char *s, size_t len)
{
	/* Methods are case-sensitive (RFC 9110 9.1). */
	for (int i = MM_M_GET; i < MM_M__COUNT; i++)
		if (strlen(method_names[i]) == len &&
		    !memcmp(method_names[i], s, len))
			return (uint8_t)i;
	return MM_M_OTHER;
}

const char *gateway_api__method_name(uint8_t m)
{
	if (m == MM_M_ANY)
		return "any";
	return m < MM_M__COUNT ? method_names[m] : "OTHER";
}
