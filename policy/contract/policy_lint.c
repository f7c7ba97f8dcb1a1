// SPDX-License-Identifier: Apache-2.0
/*
 * Semantic checks of MetricPolicies: see policy_lint.h.
 *
 * Schemas are written in a compact notation, one string of fields per
 * type, read in place (nothing is built):
 *   name            a scalar (string, number, bool, timestamp)
 *   name{...}       an object with these fields; {*} an open object
 *   name:Type       an object of a named type below
 *   name[]          a list of scalars; name[]{...}, name[]:Type lists of
 *                   objects
 *   name<>          a map with any keys (labels, annotations)
 * The fields are those of the types' Go definitions (the Gateway API's
 * apis/v1 types, k8s.io/api core/v1 and metav1, the contract's CRDs in
 * deploy/kubernetes/crds/); experimental fields a conforming object may
 * carry are open ({*}) rather than spelt out.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "policy/cel/cel.h"
#include "policy/contract/crd_policy.h"
#include "policy/contract/policy_lint.h"
#include "policy/gateway/gateway_api.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"
#include "policy/source/source_catalogue.h"
#include "policy/source/spelling.h"

static const struct {
	const char *name, *fields;
} types[] = {
	{ "ObjectMeta",
	  "name namespace uid resourceVersion generation creationTimestamp "
	  "deletionTimestamp deletionGracePeriodSeconds generateName selfLink "
	  "labels<> annotations<> finalizers[] "
	  "ownerReferences[]{apiVersion kind name uid controller "
	  "blockOwnerDeletion} managedFields[]{*}" },
	{ "Condition",
	  "type status observedGeneration lastTransitionTime reason message" },
	{ "LabelSelector",
	  "matchLabels<> matchExpressions[]{key operator values[]}" },
	{ "ParentReference", "group kind namespace name sectionName port" },
	{ "ObjectReference", "group kind namespace name port" },
	{ "HeaderModifier", "set[]{name value} add[]{name value} remove[]" },
	{ "PathModifier", "type replaceFullPath replacePrefixMatch" },
	{ "HTTPRouteFilter",
	  "type requestHeaderModifier:HeaderModifier "
	  "responseHeaderModifier:HeaderModifier "
	  "requestMirror{backendRef:ObjectReference percent "
	  "fraction{numerator denominator}} "
	  "requestRedirect{scheme hostname path:PathModifier port statusCode} "
	  "urlRewrite{hostname path:PathModifier} "
	  "extensionRef{group kind name} cors{*} externalAuth{*}" },
	{ "HTTPRoute",
	  "apiVersion kind metadata:ObjectMeta "
	  "spec{parentRefs[]:ParentReference hostnames[] "
	  "rules[]{name matches[]{path{type value} headers[]{type name value} "
	  "queryParams[]{type name value} method} "
	  "filters[]:HTTPRouteFilter "
	  "backendRefs[]{group kind name namespace port weight "
	  "filters[]:HTTPRouteFilter} "
	  "timeouts{request backendRequest} retry{*} sessionPersistence{*}}} "
	  "status{parents[]{parentRef:ParentReference controllerName "
	  "conditions[]:Condition}}" },
	{ "Gateway",
	  "apiVersion kind metadata:ObjectMeta "
	  "spec{gatewayClassName listeners[]{name hostname port protocol "
	  "tls{mode certificateRefs[]:ObjectReference frontendValidation{*} "
	  "options<>} allowedRoutes{namespaces{from selector:LabelSelector} "
	  "kinds[]{group kind}}} addresses[]{type value} "
	  "infrastructure{labels<> annotations<> parametersRef{group kind name}} "
	  "backendTLS{*} allowedListeners{*}} "
	  "status{addresses[]{type value} conditions[]:Condition "
	  "listeners[]{name supportedKinds[]{group kind} attachedRoutes "
	  "conditions[]:Condition}}" },
	{ "Namespace",
	  "apiVersion kind metadata:ObjectMeta spec{finalizers[]} "
	  "status{phase conditions[]{type status lastTransitionTime reason "
	  "message}}" },
	{ "MetricDefinition", "apiVersion kind metadata:ObjectMeta "
			      "spec{resource{group kind resource version} "
			      "metric{name description stability "
			      "instrument{type unit aggregationTemporality}} "
			      "labels[]{key description required}} "
			      "status{conditions[]:Condition}" },
	{ "MetricPolicy",
	  "apiVersion kind metadata:ObjectMeta "
	  "spec{subject{group version kind apiGroup resource scope} "
	  "targetMetric{name} "
	  "source{type resourceFields{seriesFrom{path value{cel} labels<>} "
	  "dropIf{cel} staticLabels<>} "
	  "dataPlane{selector{otel{metricName temporality "
	  "attributeSelectors[]{key valueFrom} "
	  "attributeFilters[]{key prefix regex}}} "
	  "transform{value{cel} labels<>} sampling{*}}}} "
	  "status{conditions[]:Condition}" },
};

/* The subject kinds whose schema is known, by API group. */
static const struct {
	const char *group, *kind, *api;
} kinds[] = {
	{ GW_GROUP, "HTTPRoute", GW_GROUP "/v1" },
	{ GW_GROUP, "Gateway", GW_GROUP "/v1" },
	{ "", "Namespace", "v1" },
	{ CRD_GROUP, "MetricDefinition", CRD_API_VERSION },
	{ CRD_GROUP, "MetricPolicy", CRD_API_VERSION },
};

/* Where a known schema is known to differ from what policies expect. */
static const struct {
	const char *kind, *path, *why;
} hints[] = {
	{ "HTTPRoute", "status.conditions",
	  "the Gateway API keeps an HTTPRoute's conditions per parent Gateway, "
	  "under status.parents[].conditions (seriesFrom.path "
	  "\"resource.status.parents\", then item.conditions); an extension "
	  "may add status.conditions: objects that carry it give series, "
	  "the others none" },
};

enum sk { SK_SCALAR, SK_OBJECT, SK_OPEN, SK_LIST, SK_MAP };

struct snode {
	enum sk kind;
	const char *at; /* OBJECT: its field list; LIST: the element's suffix */
	const char *type; /* named type, for messages; NULL when inline */
	/*
	 * A CRD's OpenAPI v3 schema instead of the notation: OBJECT its
	 * properties, LIST its items, MAP its additionalProperties.
	 */
	const struct doc_node *oapi;
	bool root; /* the object itself: metadata is ObjectMeta */
};

static bool name_ch(char c)
{
	return isalnum((unsigned char)c) || c == '_';
}

static const char *type_fields(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (strlen(types[i].name) == len &&
		    !strncmp(types[i].name, name, len))
			return types[i].fields;
	return NULL;
}

static const char *suffix_end(const char *s)
{
	int depth = 1;

	if (s[0] == '[' && s[1] == ']')
		return suffix_end(s + 2);
	if (s[0] == '<' && s[1] == '>')
		return s + 2;
	if (*s == ':') {
		for (s++; name_ch(*s); s++)
			;
		return s;
	}
	if (*s != '{')
		return s;
	for (s++; *s && depth; s++)
		depth += (*s == '{') - (*s == '}');
	return s;
}

static struct snode resolve(const char *s)
{
	struct snode n = { SK_SCALAR, NULL, NULL, NULL, false };

	if (s[0] == '[' && s[1] == ']') {
		n.kind = SK_LIST;
		n.at = s + 2;
	} else if (s[0] == '<' && s[1] == '>') {
		n.kind = SK_MAP;
	} else if (*s == ':') {
		const char *name = s + 1, *e = suffix_end(s);

		n.kind = SK_OBJECT;
		n.at = type_fields(name, (size_t)(e - name));
		n.type = n.at ? name : NULL;
		if (!n.at)
			n.kind = SK_OPEN;
	} else if (*s == '{') {
		n.kind = s[1] == '*' ? SK_OPEN : SK_OBJECT;
		n.at = s + 1;
	}
	return n;
}

/* A node of a CRD's openAPIV3Schema. */
static struct snode resolve_oapi(const struct doc_node *sc)
{
	struct snode n = { SK_OPEN, NULL, NULL, NULL, false };
	const struct doc_node *props, *ap;
	const char *type;

	if (!sc || sc->kind != DOC_MAP)
		return n; /* additionalProperties: true, or no schema */
	props = doc__get(sc, "properties");
	type = doc__str(sc, "type");
	ap = doc__get(sc, "additionalProperties");
	if (props && props->kind == DOC_MAP) {
		n.kind = SK_OBJECT;
		n.oapi = props;
	} else if (type && !strcmp(type, "array")) {
		n.kind = SK_LIST;
		n.oapi = doc__get(sc, "items");
	} else if (ap) {
		n.kind = SK_MAP;
		n.oapi = ap;
	} else if (type && strcmp(type, "object")) {
		n.kind = SK_SCALAR;
	}
	/* x-kubernetes-preserve-unknown-fields, or a bare object: open */
	return n;
}

/* Next field of an object's list at s: name and suffix; NULL at the end. */
static const char *next_field(const char *s, const char **name, size_t *len,
			      const char **suffix)
{
	while (*s == ' ')
		s++;
	if (!*s || *s == '}')
		return NULL;
	*name = s;
	while (name_ch(*s))
		s++;
	*len = (size_t)(s - *name);
	*suffix = s;
	return suffix_end(s);
}

static const char *find_field(const char *fields, const char *want, size_t wlen)
{
	const char *name, *suffix, *s = fields;
	size_t len;

	while ((s = next_field(s, &name, &len, &suffix)))
		if (len == wlen && !strncmp(name, want, len))
			return suffix;
	return NULL;
}

#define MAX_NAMES 32

struct names {
	char buf[MAX_NAMES][48];
	const char *p[MAX_NAMES];
	size_t n;
	char list[512]; /* "a, b, c" */
};

/* One more name (len bytes of name), also appended to the list at *off. */
static void add_name(struct names *nm, size_t *off, const char *name,
		     size_t len)
{
	snprintf(nm->buf[nm->n], sizeof(nm->buf[0]), "%.*s", (int)len, name);
	nm->p[nm->n] = nm->buf[nm->n];
	if (*off < sizeof(nm->list))
		*off += snprintf(nm->list + *off, sizeof(nm->list) - *off,
				 "%s%s", nm->n ? ", " : "", nm->buf[nm->n]);
	nm->n++;
}

static void field_names(const char *fields, struct names *nm)
{
	const char *name, *suffix, *s = fields;
	size_t len, off = 0;

	nm->n = 0;
	nm->list[0] = 0;
	while ((s = next_field(s, &name, &len, &suffix)) && nm->n < MAX_NAMES)
		add_name(nm, &off, name, len);
}

static void oapi_names(const struct doc_node *props, struct names *nm)
{
	size_t off = 0;

	nm->n = 0;
	nm->list[0] = 0;
	for (size_t i = 0; i < props->map.n && nm->n < MAX_NAMES; i++)
		add_name(nm, &off, props->map.keys[i],
			 strlen(props->map.keys[i]));
}

struct lint {
	const struct metric_policy *p;
	struct crd_err *e;
	policy_lint_warn_fn warn;
	void *ctx;
	const char *kind; /* subject kind with a known schema, or NULL */
	const char *api;
	struct snode subject;
	struct snode item; /* seriesFrom's element */
	bool item_known;
	bool schema_warned;
	bool cluster; /* the cluster's CRDs were looked at too */
	const struct source_metric *src; /* NULL: unknown source */
	/* the expression being looked at */
	const char *field;
	uint32_t line;
	int err;
};

static void lwarn(struct lint *l, uint32_t line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void lwarn(struct lint *l, uint32_t line, const char *fmt, ...)
{
	char msg[COND_MSG_MAX];
	va_list ap;
	int off;

	off = snprintf(msg, sizeof(msg), "%s:%u: ", l->p->file, line);
	va_start(ap, fmt);
	vsnprintf(msg + off, sizeof(msg) - off, fmt, ap);
	va_end(ap);
	l->warn(l->ctx, msg);
}

static void lfail(struct lint *l, const char *reason, uint32_t line,
		  const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void lfail(struct lint *l, const char *reason, uint32_t line,
		  const char *fmt, ...)
{
	char msg[COND_MSG_MAX];
	va_list ap;
	int off;

	if (l->err) {
		/* the first error is the condition; the rest still get said */
		va_start(ap, fmt);
		vsnprintf(msg, sizeof(msg), fmt, ap);
		va_end(ap);
		lwarn(l, line, "also wrong (%s): %s", reason, msg);
		return;
	}
	l->err = -EINVAL;
	snprintf(l->e->reason, sizeof(l->e->reason), "%s", reason);
	off = snprintf(l->e->msg, sizeof(l->e->msg), "%s:%u: ", l->p->file,
		       line);
	va_start(ap, fmt);
	vsnprintf(l->e->msg + off, sizeof(l->e->msg) - off, fmt, ap);
	va_end(ap);
}

/* "resource.spec.rules[...].matches" for the first n segments. */
static void render(char *buf, size_t len, const char *var,
		   const struct cel_path_seg *seg, size_t n)
{
	size_t off = (size_t)snprintf(buf, len, "%s", var);

	for (size_t i = 0; i < n && off < len; i++) {
		if (seg[i].any)
			off += snprintf(buf + off, len - off, "[...]");
		else if (seg[i].indexed)
			off += snprintf(buf + off, len - off, "['%.*s']",
					(int)seg[i].len, seg[i].s);
		else
			off += snprintf(buf + off, len - off, ".%.*s",
					(int)seg[i].len, seg[i].s);
	}
}

static const char *hint_for(const char *kind, const struct cel_path_seg *seg,
			    size_t n)
{
	char path[256] = "";
	size_t off = 0;

	for (size_t i = 0; i < n && off < sizeof(path); i++) {
		if (seg[i].any)
			return NULL;
		off += snprintf(path + off, sizeof(path) - off, "%s%.*s",
				i ? "." : "", (int)seg[i].len, seg[i].s);
	}
	for (size_t i = 0; i < sizeof(hints) / sizeof(hints[0]); i++)
		if (!strcmp(hints[i].kind, kind) &&
		    !strcmp(hints[i].path, path))
			return hints[i].why;
	return NULL;
}

/*
 * Follow seg[0..n) from node at. Returns false after an error or warning
 * (reported); true with *end the node reached otherwise (SK_OPEN when the
 * rest cannot be known).
 */
static bool walk(struct lint *l, struct snode at, const char *var,
		 const struct cel_path_seg *seg, size_t n, const char *what,
		 struct snode *end)
{
	char here[256], fix[300];
	struct names nm;

	for (size_t i = 0; i < n; i++) {
		const struct cel_path_seg *s = &seg[i];
		const char *suffix, *near;
		bool closed;

		render(here, sizeof(here), var, seg, i);
		switch (at.kind) {
		case SK_OPEN:
			*end = at;
			return true;
		case SK_SCALAR:
			lfail(l, "InvalidCEL", l->line,
			      "%s: `%s` is a scalar field of %s: it has no field %.*s",
			      what, here, l->kind, (int)s->len, s->s);
			return false;
		case SK_MAP:
			if (at.oapi)
				at = resolve_oapi(at.oapi);
			else
				at.kind = SK_SCALAR;
			continue;
		case SK_LIST:
			if (!s->any) {
				lfail(l, "InvalidCEL", l->line,
				      "%s: `%s` is a list in %s: select an element first (`%s[0].%.*s`), or use it as seriesFrom.path",
				      what, here, l->kind, here, (int)s->len,
				      s->s);
				return false;
			}
			at = at.oapi ? resolve_oapi(at.oapi) : resolve(at.at);
			continue;
		case SK_OBJECT:
			break;
		}
		if (at.oapi && !s->any) {
			const struct doc_node *f;
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)s->len, s->s);
			if (at.root && !strcmp(word, "metadata")) {
				/* a CRD's schema leaves ObjectMeta out */
				at = resolve(":ObjectMeta");
				continue;
			}
			f = doc__get(at.oapi, word);
			if (f || (at.root && (!strcmp(word, "apiVersion") ||
					      !strcmp(word, "kind")))) {
				at = f ? resolve_oapi(f)
				       : (struct snode){ .kind = SK_SCALAR };
				continue;
			}
			oapi_names(at.oapi, &nm);
			near = spelling__closest(word, nm.p, nm.n);
			render(fix, sizeof(fix), var, seg, i + 1);
			if (near)
				lfail(l, "InvalidCEL", l->line,
				      "%s: `%s`: %s (its CRD's schema) has no field %s in `%s` (did you mean `%s.%s`?)",
				      what, fix, l->kind, word, here, here,
				      near);
			else
				lfail(l, "InvalidCEL", l->line,
				      "%s: `%s`: %s (its CRD's schema) has no field %s in `%s` (fields: %s)",
				      what, fix, l->kind, word, here, nm.list);
			return false;
		}
		if (s->any) {
			at.kind = SK_OPEN; /* a computed key: cannot know */
			continue;
		}
		suffix = find_field(at.at, s->s, s->len);
		if (suffix) {
			at = resolve(suffix);
			continue;
		}
		field_names(at.at, &nm);
		{
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)s->len, s->s);
			near = spelling__closest(word, nm.p, nm.n);
		}
		render(fix, sizeof(fix), var, seg, i + 1);
		closed = at.type && !strncmp(at.type, "ObjectMeta", 10);
		if (near) {
			lfail(l, "InvalidCEL", l->line,
			      "%s: `%s`: %s (%s) has no field %.*s in `%s` (did you mean `%s.%s`?)",
			      what, fix, l->kind, l->api, (int)s->len, s->s,
			      here, here, near);
			return false;
		}
		if (closed) {
			lfail(l, "InvalidCEL", l->line,
			      "%s: `%s`: ObjectMeta has no field %.*s (fields: %s)",
			      what, fix, (int)s->len, s->s, nm.list);
			return false;
		}
		{
			const char *why = hint_for(l->kind, seg, i + 1);

			if (why)
				lwarn(l, l->line,
				      "%s: `%s` is not in the %s schema (%s): %s",
				      what, fix, l->kind, l->api, why);
			else
				lwarn(l, l->line,
				      "%s: `%s` is not in the %s schema (%s; fields here: %s): the expression fails on objects without it, unless an extension adds it",
				      what, fix, l->kind, l->api, nm.list);
		}
		return false;
	}
	*end = at;
	return true;
}

static void check_attr(struct lint *l, const char *key, size_t len,
		       uint32_t line, const char *what)
{
	char k[256];
	const char *near;

	if (!l->src)
		return; /* another data plane's metric: its attributes unknown */
	snprintf(k, sizeof(k), "%.*s", (int)len, key);
	if (source_catalogue__carries(l->src, k))
		return;
	near = source_catalogue__closest_attr(l->src, k);
	if (near)
		lfail(l, "UnknownAttribute", line,
		      "%s: attribute %s is not carried by %s samples (did you mean `%s`?)",
		      what, k, l->src->name, near);
	else
		lwarn(l, line,
		      "%s: attribute %s is not carried by milometer's %s samples, so this never matches here (attributes: %s...)",
		      what, k, l->src->name, l->src->attrs[0]);
}

static void on_path(void *ctx, const struct cel_path *cp)
{
	struct lint *l = ctx;
	struct snode end;

	if (cp->var == CEL_VAR_ATTRIBUTES) {
		if (cp->n && !cp->seg[0].any)
			check_attr(l, cp->seg[0].s, cp->seg[0].len, l->line,
				   l->field);
		return;
	}
	if (cp->var == CEL_VAR_RESOURCE) {
		if (!l->kind) {
			if (!l->schema_warned)
				lwarn(l, l->line,
				      "%s: the schema of subject %s%s%s is unknown here, so paths into resource are not checked (%s)",
				      l->field, l->p->subj_group,
				      *l->p->subj_group ? "/" : "",
				      l->p->subj_kind,
				      l->cluster
					      ? "no CustomResourceDefinition of it in the manifests and none installed in the cluster: the policy gives no series until one is"
					      : "add its CustomResourceDefinition to the manifests, or check against the cluster with --kubeconfig, to check them");
			l->schema_warned = true;
			return;
		}
		walk(l, l->subject, "resource", cp->seg, cp->n, l->field, &end);
	} else if (cp->var == CEL_VAR_ITEM && l->item_known) {
		walk(l, l->item, "item", cp->seg, cp->n, l->field, &end);
	}
}

static void expr(struct lint *l, const struct mp_expr *x, const char *field)
{
	if (!x->prog)
		return;
	l->field = field;
	l->line = x->line;
	cel__paths(x->prog, on_path, l);
}

/* seriesFrom.path: "status.conditions" below resource. */
static void series_path(struct lint *l)
{
	struct cel_path_seg seg[CEL_PATH_MAX];
	const char *s = l->p->series_path;
	struct snode end;
	size_t n = 0;

	if (!l->kind || !s)
		return;
	while (*s && n < CEL_PATH_MAX) {
		const char *dot = strchr(s, '.');
		size_t len = dot ? (size_t)(dot - s) : strlen(s);

		seg[n++] = (struct cel_path_seg){ .s = s, .len = len };
		s += len + (dot != NULL);
	}
	l->field = "spec.source.resourceFields.seriesFrom.path";
	l->line = l->p->series_path_line;
	if (!walk(l, l->subject, "resource", seg, n, l->field, &end))
		return;
	/* item is each element of a list, else the value itself */
	l->item = end.kind != SK_LIST ? end
		  : end.oapi          ? resolve_oapi(end.oapi)
				      : resolve(end.at);
	l->item_known = true;
}

static void source_metric(struct lint *l)
{
	const char *m = l->p->src_metric;
	const char *near;

	l->src = source_catalogue__find(m);
	if (l->src)
		return;
	near = source_catalogue__closest_metric(m);
	if (near) {
		lfail(l, "UnknownSourceMetric", l->p->src_metric_line,
		      "spec.source.dataPlane.selector.otel.metricName: milometer produces no source metric %s (did you mean `%s`?)",
		      m, near);
		/* hold the rest of the policy against what was meant */
		l->src = source_catalogue__find(near);
	} else
		lwarn(l, l->p->src_metric_line,
		      "spec.source.dataPlane.selector.otel.metricName: milometer produces no source metric %s (it produces %s, %s, %s, %s); the policy stays NoSource unless another data plane feeds it",
		      m, source_catalogue__metrics[0].name,
		      source_catalogue__metrics[1].name,
		      source_catalogue__metrics[2].name,
		      source_catalogue__metrics[3].name);
}

/*
 * The openAPIV3Schema of the subject's CustomResourceDefinition in src: the
 * served version the subject names, else the storage one.
 */
static const struct doc_node *crd_schema_in(const struct manifest_source *src,
					    const struct metric_policy *p,
					    const char **kind,
					    const char **version,
					    const struct mobject **from)
{
	const struct mobject *o = NULL;

	while (src && (o = manifest_source__next(
			       src, "CustomResourceDefinition", o))) {
		const char *g = doc__str(o->root, "spec.group");
		const char *k = doc__str(o->root, "spec.names.kind");
		const char *pl = doc__str(o->root, "spec.names.plural");
		const struct doc_node *vs = doc__path(o->root, "spec.versions");
		const struct doc_node *pick = NULL;

		if (!o->api_version ||
		    strncmp(o->api_version, "apiextensions.k8s.io/", 21) ||
		    !g || strcmp(g, p->subj_group) || !k ||
		    !(crd__kind_matches(k, p->subj_kind) ||
		      (pl && !strcasecmp(pl, p->subj_kind))) ||
		    !vs || vs->kind != DOC_LIST)
			continue;
		for (size_t i = 0; i < vs->list.n; i++) {
			const struct doc_node *v = vs->list.items[i];
			const struct doc_node *st = doc__get(v, "storage");
			const struct doc_node *sv = doc__get(v, "served");
			const char *name = doc__str(v, "name");

			/* the API server answers no request for it */
			if (sv && sv->kind == DOC_BOOL && !sv->b)
				continue;
			if (p->subj_version) {
				if (name && !strcmp(name, p->subj_version))
					pick = v;
			} else if (!pick ||
				   (st && st->kind == DOC_BOOL && st->b)) {
				pick = v;
			}
		}
		if (!pick)
			continue;
		*kind = k;
		*version = doc__str(pick, "name");
		*from = o;
		return doc__path(pick, "schema.openAPIV3Schema");
	}
	return NULL;
}

/* The manifests' CRD wins over the installed one: it is what gets applied. */
static const struct doc_node *
crd_schema(const struct manifest_source *src,
	   const struct manifest_source *crds, const struct metric_policy *p,
	   const char **kind, const char **version, const struct mobject **from)
{
	const struct doc_node *sc = crd_schema_in(src, p, kind, version, from);

	return sc ? sc : crd_schema_in(crds, p, kind, version, from);
}

static const char *known_kind(const struct metric_policy *p, size_t *i)
{
	for (*i = 0; *i < sizeof(kinds) / sizeof(kinds[0]); (*i)++)
		if (!strcmp(kinds[*i].group, p->subj_group) &&
		    crd__kind_matches(kinds[*i].kind, p->subj_kind))
			return kinds[*i].kind;
	return NULL;
}

void policy_lint__schema(const struct metric_policy *p,
			 const struct manifest_source *src,
			 const struct manifest_source *crds, char *buf,
			 size_t len)
{
	const char *kind = NULL, *version = NULL;
	const struct mobject *from = NULL;
	size_t i;

	if (known_kind(p, &i)) {
		snprintf(buf, len, "the built-in schema of %s %s", kinds[i].api,
			 kinds[i].kind);
	} else if (crd_schema(src, crds, p, &kind, &version, &from)) {
		char at[16] = "";

		/* objects from the API have no line */
		if (from->line)
			snprintf(at, sizeof(at), ":%u", from->line);
		snprintf(
			buf, len,
			"the openAPIV3Schema of CustomResourceDefinition %s version %s (%s%s)",
			from->name ? from->name : "?", version ? version : "?",
			from->file, at);
	} else {
		snprintf(
			buf, len,
			"none: no CustomResourceDefinition of %s%s%s in the manifests%s",
			p->subj_group, *p->subj_group ? "/" : "", p->subj_kind,
			crds ? " or the cluster" : "");
	}
}

int policy_lint__check(const struct metric_policy *p,
		       const struct manifest_source *src,
		       const struct manifest_source *crds, struct crd_err *e,
		       policy_lint_warn_fn warn, void *ctx)
{
	struct lint l = { .p = p,
			  .e = e,
			  .warn = warn,
			  .ctx = ctx,
			  .cluster = crds != NULL };
	char field[192], api[160];
	size_t i;

	if (known_kind(p, &i)) {
		l.kind = kinds[i].kind;
		l.api = kinds[i].api;
		l.subject = (struct snode){ SK_OBJECT,
					    type_fields(l.kind, strlen(l.kind)),
					    l.kind };
	}
	if (!l.kind) {
		const char *kind = NULL, *version = NULL;
		const struct mobject *from = NULL;
		const struct doc_node *sc =
			crd_schema(src, crds, p, &kind, &version, &from);

		if (sc) {
			snprintf(api, sizeof(api), "%s/%s", p->subj_group,
				 version ? version : "?");
			l.kind = kind;
			l.api = api;
			l.subject = resolve_oapi(sc);
			l.subject.root = true;
		}
	}
	if (p->type == MP_DATA_PLANE) {
		source_metric(&l);
		for (size_t i = 0; i < p->nsels; i++) {
			snprintf(
				field, sizeof(field),
				"spec.source.dataPlane.selector.otel.attributeSelectors[%zu]",
				i);
			check_attr(&l, p->sels[i].key, strlen(p->sels[i].key),
				   p->sels[i].key_line, field);
			strncat(field, ".valueFrom",
				sizeof(field) - strlen(field) - 1);
			expr(&l, &p->sels[i].e, field);
		}
		for (size_t i = 0; i < p->nfilters; i++) {
			snprintf(
				field, sizeof(field),
				"spec.source.dataPlane.selector.otel.attributeFilters[%zu]",
				i);
			check_attr(&l, p->filters[i].key,
				   strlen(p->filters[i].key),
				   p->filters[i].key_line, field);
		}
		expr(&l, &p->value,
		     "spec.source.dataPlane.transform.value.cel");
	} else {
		series_path(&l);
		expr(&l, &p->rf_value,
		     "spec.source.resourceFields.seriesFrom.value.cel");
		expr(&l, &p->drop_if, "spec.source.resourceFields.dropIf.cel");
	}
	for (size_t i = 0; i < p->nlabels; i++) {
		snprintf(
			field, sizeof(field), "%s.%s",
			p->type == MP_DATA_PLANE
				? "spec.source.dataPlane.transform.labels"
				: "spec.source.resourceFields.seriesFrom.labels",
			p->labels[i].key);
		expr(&l, &p->labels[i].e, field);
	}
	return l.err;
}
