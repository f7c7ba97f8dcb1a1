// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "agent/k8s/api_source.h"
#include "agent/k8s/config.h"
#include "agent/k8s/http.h"
#include "agent/k8s/json_doc.h"
#include "agent/k8s/reflector.h"
#include "agent/k8s/store.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"
#define LOG_MODULE "k8s"
#include "policy/util/log.h"

#ifndef MM_VERSION
#define MM_VERSION "dev"
#endif

#define MAX_RES 12

struct k8s_api {
	struct k8s_config *cfg;
	struct k8s_http_stats http;
	struct k8s_resource res[MAX_RES];
	struct k8s_store *stores[MAX_RES];
	struct k8s_reflector *refl[MAX_RES];
	bool in_snapshot[MAX_RES]; /* pods are not manifests */
	size_t n;
	char *pod_selector;
	char ua[128];
	uint64_t snap_gen; /* sum of store generations at the last snapshot */
};

static const struct {
	const char *group, *version, *plural, *kind, *field;
	bool routes;       /* needed for the route table */
	const char *label; /* label selector */
} watched[] = {
	{ "gateway.networking.k8s.io", "v1", "gateways", "Gateway", NULL,
	  true },
	{ "gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", NULL,
	  true },
	{ "telemetry.miloapis.com", "v1alpha1", "metricdefinitions",
	  "MetricDefinition", NULL, false },
	{ "telemetry.miloapis.com", "v1alpha1", "metricpolicies",
	  "MetricPolicy", NULL, false },
	/* RBAC resourceNames on list/watch need the name as a field selector */
	{ "about.k8s.io", "v1alpha1", "clusterproperties", "ClusterProperty",
	  "metadata.name=cluster.clusterset.k8s.io", false },
	{ "about.k8s.io", "v1alpha1", "clusterproperties", "ClusterProperty",
	  "metadata.name=clusterset.k8s.io", false },
	{ "", "v1", "namespaces", "Namespace", NULL, false },
	/*
	 * Gateway proxies' Services (listener port -> targetPort, the port the
	 * proxy accepts on), by the labels that name their Gateway, as proxy
	 * pods carry them (agent/proxy_pods.c): only those are sent.
	 */
	{ "", "v1", "services", "Service", NULL, false,
	  "gateway.networking.k8s.io/gateway-name" },
	{ "", "v1", "services", "Service", NULL, false,
	  "gateway.envoyproxy.io/owning-gateway-name" },
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void add_res(struct k8s_api *a, const char *g, const char *v,
		    const char *p, const char *k, const char *field,
		    const char *label, bool snap)
{
	a->res[a->n] = (struct k8s_resource){
		.group = g,
		.version = v,
		.plural = p,
		.kind = k,
		.field_selector = field,
		.label_selector = label,
	};
	a->in_snapshot[a->n] = snap;
	a->n++;
}

int k8s_api__start(const struct k8s_api_opts *o, struct k8s_api **out,
		   char *err, size_t errlen)
{
	struct k8s_api *a = calloc(1, sizeof(*a));
	const char *env = getenv("MILOMETER_K8S_WATCH_TIMEOUT");
	uint32_t min_watch = o->min_watch_s;
	int ret;

	*out = NULL;
	if (!a)
		return -ENOMEM;
	/* once, before any thread uses curl */
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ret = k8s_config__load(o->kubeconfig, &a->cfg, err, errlen);
	if (ret)
		goto fail;
	if (!min_watch && env)
		min_watch = strtoul(env, NULL, 10);
	snprintf(a->ua, sizeof(a->ua), "%s",
		 o->user_agent ? o->user_agent : "milometer/" MM_VERSION);
	for (size_t i = 0; i < sizeof(watched) / sizeof(watched[0]); i++)
		if (!o->only_routes || watched[i].routes)
			add_res(a, watched[i].group, watched[i].version,
				watched[i].plural, watched[i].kind,
				watched[i].field, watched[i].label, true);
	if (o->node_name && !o->only_routes) {
		if (asprintf(&a->pod_selector, "spec.nodeName=%s",
			     o->node_name) < 0) {
			ret = -ENOMEM;
			goto fail;
		}
		add_res(a, "", "v1", "pods", "Pod", a->pod_selector, NULL,
			false);
	}
	for (size_t i = 0; i < a->n; i++) {
		struct k8s_reflector_opts ro = {
			.res = &a->res[i],
			.cfg = a->cfg,
			.user_agent = a->ua,
			.http_stats = &a->http,
			.min_watch_s = min_watch,
		};

		a->stores[i] = k8s_store__new(NULL, NULL);
		ro.store = a->stores[i];
		if (!a->stores[i] ||
		    !(a->refl[i] = k8s_reflector__start(&ro))) {
			snprintf(err, errlen, "k8s: cannot start the %s watch",
				 a->res[i].plural);
			ret = -ENOMEM;
			goto fail;
		}
	}
	pr_info("watching %zu resources on %s (%s)\n", a->n, a->cfg->server,
		a->cfg->origin);
	*out = a;
	return 0;
fail:
	k8s_api__free(a);
	return ret;
}

void k8s_api__free(struct k8s_api *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->n; i++)
		k8s_reflector__stop(a->refl[i]);
	for (size_t i = 0; i < a->n; i++) {
		k8s_reflector__free(a->refl[i]);
		k8s_store__free(a->stores[i]);
	}
	k8s_config__free(a->cfg);
	free(a->pod_selector);
	free(a);
}

/*
 * A watch is done when it has listed once or knows its resource is absent,
 * forbidden or unauthorized (each logged on its own). Returns the number
 * done, the number listed in *listed, the first not done in *first.
 */
static size_t count_synced(struct k8s_api *a, size_t *listed, size_t *first)
{
	size_t done = 0;

	*listed = 0;
	*first = a->n;
	for (size_t i = 0; i < a->n; i++) {
		struct k8s_reflector_stats *st =
			k8s_reflector__stats(a->refl[i]);
		int s = st->state;
		bool d = st->synced || s == K8S_W_ABSENT ||
			 s == K8S_W_FORBIDDEN || s == K8S_W_UNAUTHORIZED;

		*listed += st->synced;
		done += d;
		if (!d && *first == a->n)
			*first = i;
	}
	return done;
}

bool k8s_api__wait_synced(struct k8s_api *a, uint32_t timeout_ms)
{
	uint64_t end = mono_ns() + timeout_ms * 1000000ULL;
	size_t listed, first;

	for (;;) {
		if (count_synced(a, &listed, &first) == a->n)
			return listed == a->n;
		if (mono_ns() >= end)
			return false;
		usleep(20000);
	}
}

bool k8s_api__synced(struct k8s_api *a, char *why, size_t len)
{
	size_t listed, first, done = count_synced(a, &listed, &first);

	if (done == a->n)
		return true;
	snprintf(
		why, len,
		"waiting for the Kubernetes API server %s: %zu of %zu watched resources listed (%s%s%s: %s)",
		a->cfg->server, done, a->n, a->res[first].plural,
		a->res[first].group[0] ? "." : "", a->res[first].group,
		k8s_watch_state__name(
			k8s_reflector__stats(a->refl[first])->state));
	return false;
}

size_t k8s_api__nreflectors(const struct k8s_api *a)
{
	return a->n;
}

struct k8s_reflector *k8s_api__reflector(struct k8s_api *a, size_t i)
{
	return i < a->n ? a->refl[i] : NULL;
}

struct k8s_store *k8s_api__store(struct k8s_api *a, const char *plural)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->res[i].plural, plural))
			return a->stores[i];
	return NULL;
}

struct k8s_http_stats *k8s_api__http_stats(struct k8s_api *a)
{
	return &a->http;
}

struct k8s_config *k8s_api__config(struct k8s_api *a)
{
	return a->cfg;
}

const char *k8s_api__server(const struct k8s_api *a)
{
	return a->cfg->server;
}

void k8s_api__dump(struct k8s_api *a, FILE *out, int json)
{
	uint64_t now = mono_ns();

	if (json)
		fprintf(out,
			"{\"server\":\"%s\",\"requests\":%llu,\"bytes\":%llu,\"watches\":[",
			a->cfg->server, (unsigned long long)a->http.requests,
			(unsigned long long)a->http.bytes_in);
	else
		fprintf(out, "k8s %s: %llu requests, %llu bytes received\n",
			a->cfg->server, (unsigned long long)a->http.requests,
			(unsigned long long)a->http.bytes_in);
	for (size_t i = 0; i < a->n; i++) {
		struct k8s_reflector_stats *st =
			k8s_reflector__stats(a->refl[i]);
		const struct k8s_resource *r = &a->res[i];
		uint64_t age = st->last_sync_ns ? (now - st->last_sync_ns) /
							  1000000000ULL
						: 0;

		if (json) {
			fprintf(out,
				"%s{\"resource\":\"%s%s%s\",\"selector\":\"%s\",\"state\":\"%s\",\"objects\":%llu,\"lists\":%llu,\"relists\":%llu,\"watches\":%llu,\"events\":%llu,\"bookmarks\":%llu,\"last_sync_age_s\":%llu,\"errors\":{",
				i ? "," : "", r->plural, r->group[0] ? "." : "",
				r->group,
				r->field_selector   ? r->field_selector
				: r->label_selector ? r->label_selector
						    : "",
				k8s_watch_state__name(st->state),
				(unsigned long long)st->objects,
				(unsigned long long)st->lists,
				(unsigned long long)st->relists,
				(unsigned long long)st->watches,
				(unsigned long long)st->events,
				(unsigned long long)st->bookmarks,
				(unsigned long long)age);
			for (int e = 0; e < K8S_E__N; e++)
				fprintf(out, "%s\"%s\":%llu", e ? "," : "",
					k8s_err__name(e),
					(unsigned long long)st->errors[e]);
			fprintf(out, "}}");
		} else {
			fprintf(out,
				"  %-40s %-12s %6llu objects %4llu relists %5llu events, synced %llus ago\n",
				r->field_selector ? r->field_selector
						  : r->plural,
				k8s_watch_state__name(st->state),
				(unsigned long long)st->objects,
				(unsigned long long)st->relists,
				(unsigned long long)st->events,
				(unsigned long long)age);
		}
	}
	if (json)
		fprintf(out, "]}\n");
}

/* ---- the manifest source backend ---- */

struct snap_owner {
	struct doc_node **roots;
	char **labels;
	size_t n, cap;
};

static void owner_release(void *p)
{
	struct snap_owner *o = p;

	if (!o)
		return;
	for (size_t i = 0; i < o->n; i++) {
		doc__free(o->roots[i]);
		free(o->labels[i]);
	}
	free(o->roots);
	free(o->labels);
	free(o);
}

struct collect {
	struct snap_owner *own;
	int err;
};

static int collect_one(struct json_object *obj, void *ctx)
{
	struct collect *c = ctx;
	struct snap_owner *o = c->own;
	struct json_object *m = NULL, *v;
	const char *kind = "", *ns = "", *name = "";
	char *label;

	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 256;
		struct doc_node **r = realloc(o->roots, cap * sizeof(*r));
		char **l;

		if (!r)
			return c->err = -ENOMEM;
		o->roots = r;
		l = realloc(o->labels, cap * sizeof(*l));
		if (!l)
			return c->err = -ENOMEM;
		o->labels = l;
		o->cap = cap;
	}
	if (json_object_object_get_ex(obj, "kind", &v))
		kind = json_object_get_string(v);
	json_object_object_get_ex(obj, "metadata", &m);
	if (m && json_object_object_get_ex(m, "namespace", &v))
		ns = json_object_get_string(v);
	if (m && json_object_object_get_ex(m, "name", &v))
		name = json_object_get_string(v);
	/* messages read "k8s HTTPRoute apps/web:0: ..." */
	if (asprintf(&label, "k8s %s %s%s%s", kind, ns, ns[0] ? "/" : "",
		     name) < 0)
		return c->err = -ENOMEM;
	o->labels[o->n] = label;
	o->roots[o->n] = k8s_json_doc__convert(obj, label);
	if (!o->roots[o->n]) {
		free(label);
		return c->err = -ENOMEM;
	}
	o->n++;
	return 0;
}

static int cmp_obj(const void *a, const void *b)
{
	const struct mobject *x = a, *y = b;
	int r = strcmp(x->kind, y->kind);

	if (r)
		return r;
	r = strcmp(x->ns ? x->ns : "", y->ns ? y->ns : "");
	return r ? r : strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

static uint64_t gen_sum(struct k8s_api *a)
{
	uint64_t g = 0;

	for (size_t i = 0; i < a->n; i++)
		if (a->in_snapshot[i])
			g += k8s_store__generation(a->stores[i]) * (i + 1) + 1;
	return g;
}

static int api_refresh(void *impl, struct msrc_snapshot *snap)
{
	struct k8s_api *a = impl;
	struct snap_owner *own;
	struct collect c = {};
	uint64_t g = gen_sum(a);

	if (a->snap_gen && g == a->snap_gen)
		return 0;
	own = calloc(1, sizeof(*own));
	if (!own)
		return -ENOMEM;
	c.own = own;
	for (size_t i = 0; i < a->n && !c.err; i++)
		if (a->in_snapshot[i])
			k8s_store__foreach(a->stores[i], collect_one, &c);
	if (c.err)
		goto fail;
	snap->objs = calloc(own->n ? own->n : 1, sizeof(*snap->objs));
	if (!snap->objs) {
		c.err = -ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < own->n; i++) {
		const struct doc_node *r = own->roots[i];

		snap->objs[i] = (struct mobject){
			.root = r,
			.api_version = doc__str(r, "apiVersion"),
			.kind = doc__str(r, "kind") ? doc__str(r, "kind") : "",
			.name = doc__str(r, "metadata.name"),
			.ns = doc__str(r, "metadata.namespace"),
			.file = r->file,
		};
	}
	snap->nobjs = own->n;
	/* stable order, whatever the hash tables did */
	qsort(snap->objs, snap->nobjs, sizeof(*snap->objs), cmp_obj);
	snap->owner = own;
	snap->release = owner_release;
	a->snap_gen = g;
	return 1;
fail:
	owner_release(own);
	return c.err;
}

static const struct msrc_backend api_backend = {
	.name = "kubernetes API",
	.refresh = api_refresh,
	.free = NULL, /* the k8s_api outlives its source */
};

struct manifest_source *k8s_api__manifest_source(struct k8s_api *a)
{
	struct manifest_source *s = manifest_source__new(&api_backend, a);

	if (s && manifest_source__reload(s) < 0) {
		manifest_source__free(s);
		return NULL;
	}
	return s;
}
