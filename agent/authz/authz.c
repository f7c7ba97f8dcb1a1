// SPDX-License-Identifier: Apache-2.0
/* Authorization of /metrics by TokenReview and SubjectAccessReview: see authz.h. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <json-c/json.h>

#include "agent/authz/authz.h"
#include "agent/k8s/http.h"
#include "bpf/fnv1a.h"
#include "policy/model/metric_store.h"
#include "exporter/prom_server.h"

#define TOKEN_REVIEW_PATH  "/apis/authentication.k8s.io/v1/tokenreviews"
#define ACCESS_REVIEW_PATH "/apis/authorization.k8s.io/v1/subjectaccessreviews"
#define FULL_ACCESS_PATH   "/metrics"
/* a bearer token longer than this is no Kubernetes token */
#define MAX_TOKEN 8192

struct centry {
	struct centry *hnext;
	struct centry *older, *newer; /* insertion order, for the bound */
	uint64_t hash;
	uint64_t expires_ns;
	bool allowed;             /* access reviews */
	struct json_object *user; /* token reviews: NULL = unauthenticated */
	char key[];
};

struct k8s_authz {
	struct k8s_authz_opts o;
	struct k8s_http *http;
	struct prom_auth hooks;
	pthread_mutex_t lock; /* the cache and stats: a scrape may race a bench */
	struct centry **tab;
	size_t nb;
	struct centry *oldest, *newest;
	struct k8s_authz_stats st;
};

/* What one caller may read: subjects allowed, sorted. */
struct access {
	char **subj;
	size_t n;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void entry_unlink(struct k8s_authz *a, struct centry *e)
{
	struct centry **pp = &a->tab[e->hash & (a->nb - 1)];

	while (*pp && *pp != e)
		pp = &(*pp)->hnext;
	if (*pp)
		*pp = e->hnext;
	if (e->older)
		e->older->newer = e->newer;
	else
		a->oldest = e->newer;
	if (e->newer)
		e->newer->older = e->older;
	else
		a->newest = e->older;
	json_object_put(e->user);
	free(e);
	a->st.entries--;
}

/* A fresh entry for key, or NULL; an expired one is dropped on the way. */
static struct centry *cache_find(struct k8s_authz *a, const char *key,
				 uint64_t now)
{
	uint64_t h = fnv1a64_str(FNV1A64_OFFSET, key);

	for (struct centry *e = a->tab[h & (a->nb - 1)]; e; e = e->hnext) {
		if (e->hash != h || strcmp(e->key, key))
			continue;
		if (now >= e->expires_ns) {
			entry_unlink(a, e);
			return NULL;
		}
		a->st.cache_hits++;
		return e;
	}
	return NULL;
}

static struct centry *cache_put(struct k8s_authz *a, const char *key,
				uint64_t now)
{
	size_t len = strlen(key);
	struct centry *e;

	/* the bound: the oldest decision goes first (expired or not) */
	while (a->oldest && a->st.entries >= a->o.max_entries) {
		entry_unlink(a, a->oldest);
		a->st.evictions++;
	}
	e = calloc(1, sizeof(*e) + len + 1);
	if (!e)
		return NULL;
	memcpy(e->key, key, len + 1);
	e->hash = fnv1a64_str(FNV1A64_OFFSET, key);
	e->expires_ns = now + (uint64_t)a->o.ttl_s * 1000000000ull;
	e->hnext = a->tab[e->hash & (a->nb - 1)];
	a->tab[e->hash & (a->nb - 1)] = e;
	e->older = a->newest;
	if (a->newest)
		a->newest->newer = e;
	else
		a->oldest = e;
	a->newest = e;
	a->st.entries++;
	return e;
}

/*
 * POST a review; the parsed response's status object into *status (a
 * reference the caller puts). -EIO with the reason in msg when the API
 * server did not answer with one.
 */
static int post_review(struct k8s_authz *a, const char *path,
		       struct json_object *body, struct json_object **status,
		       char *msg, size_t len)
{
	const char *s =
		json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	struct k8s_req req = {
		.method = "POST",
		.path = path,
		.content_type = "application/json",
		.body = s,
		.body_len = strlen(s),
		.timeout_s = a->o.timeout_s,
		.max_body = 1 << 20,
	};
	struct k8s_resp resp = {};
	struct json_object *doc = NULL, *st = NULL;
	int ret = -EIO;

	if (k8s_http__do(a->http, &req, &resp)) {
		snprintf(msg, len,
			 "cannot reach the Kubernetes API to review "
			 "this request (%s): try again later",
			 resp.error);
		goto out;
	}
	if (resp.status != 200 && resp.status != 201) {
		snprintf(msg, len,
			 "the Kubernetes API answered %ld to a %s: "
			 "grant this agent's service account create on "
			 "tokenreviews and subjectaccessreviews "
			 "(deploy/kubernetes)",
			 resp.status,
			 strstr(path, "token") ? "TokenReview"
					       : "SubjectAccessReview");
		goto out;
	}
	doc = json_tokener_parse(resp.body);
	if (!doc || !json_object_object_get_ex(doc, "status", &st) ||
	    !json_object_is_type(st, json_type_object)) {
		snprintf(msg, len,
			 "the Kubernetes API sent a review without "
			 "a status");
		goto out;
	}
	*status = json_object_get(st);
	ret = 0;
out:
	if (ret)
		a->st.errors++;
	json_object_put(doc);
	k8s_http__resp_free(&resp);
	return ret;
}

/* The user a token belongs to (reference held by the cache), or NULL. */
static int token_review(struct k8s_authz *a, const char *token, uint64_t now,
			struct json_object **user, char *msg, size_t len)
{
	struct json_object *body, *spec, *st = NULL, *v;
	struct centry *e;
	char *key;
	int ret;

	if (asprintf(&key, "T\x1e%s", token) < 0)
		return -ENOMEM;
	e = cache_find(a, key, now);
	if (e) {
		*user = e->user;
		free(key);
		return 0;
	}
	body = json_object_new_object();
	spec = json_object_new_object();
	json_object_object_add(
		body, "apiVersion",
		json_object_new_string("authentication.k8s.io/v1"));
	json_object_object_add(body, "kind",
			       json_object_new_string("TokenReview"));
	json_object_object_add(spec, "token", json_object_new_string(token));
	json_object_object_add(body, "spec", spec);
	a->st.token_reviews++;
	ret = post_review(a, TOKEN_REVIEW_PATH, body, &st, msg, len);
	json_object_put(body);
	if (ret) {
		free(key);
		return ret;
	}
	e = cache_put(a, key, now);
	free(key);
	if (!e) {
		json_object_put(st);
		return -ENOMEM;
	}
	if (json_object_object_get_ex(st, "authenticated", &v) &&
	    json_object_get_boolean(v) &&
	    json_object_object_get_ex(st, "user", &v) &&
	    json_object_is_type(v, json_type_object))
		e->user = json_object_get(v);
	json_object_put(st);
	*user = e->user;
	return 0;
}

static void add_extra(struct json_object *extra, const char *kv, const char *ns)
{
	const char *eq = strchr(kv, '=');
	const char *tpl = strstr(eq + 1, "{namespace}");
	struct json_object *list;
	char key[256], val[512];

	snprintf(key, sizeof(key), "%.*s", (int)(eq - kv), kv);
	if (tpl)
		snprintf(val, sizeof(val), "%.*s%s%s", (int)(tpl - eq - 1),
			 eq + 1, ns ? ns : "", tpl + strlen("{namespace}"));
	else
		snprintf(val, sizeof(val), "%s", eq + 1);
	if (!json_object_object_get_ex(extra, key, &list)) {
		list = json_object_new_array();
		json_object_object_add(extra, key, list);
	}
	json_object_array_add(list, json_object_new_string(val));
}

/*
 * May user get this? attrs is a resourceAttributes or
 * nonResourceAttributes object (taken). 1 allowed, 0 not, -EIO unanswered.
 */
static int access_review(struct k8s_authz *a, struct json_object *user,
			 const char *attr_key, struct json_object *attrs,
			 const char *ns, uint64_t now, char *msg, size_t len)
{
	struct json_object *body = json_object_new_object();
	struct json_object *spec = json_object_new_object();
	struct json_object *extra = json_object_new_object(), *v, *st = NULL;
	const char *key;
	struct centry *e;
	int ret;

	json_object_object_add(
		body, "apiVersion",
		json_object_new_string("authorization.k8s.io/v1"));
	json_object_object_add(body, "kind",
			       json_object_new_string("SubjectAccessReview"));
	json_object_object_add(spec, attr_key, attrs);
	if (json_object_object_get_ex(user, "username", &v))
		json_object_object_add(spec, "user", json_object_get(v));
	if (json_object_object_get_ex(user, "uid", &v))
		json_object_object_add(spec, "uid", json_object_get(v));
	if (json_object_object_get_ex(user, "groups", &v))
		json_object_object_add(spec, "groups", json_object_get(v));
	/* the caller's extra unchanged (a deep copy: we append to it) */
	if (json_object_object_get_ex(user, "extra", &v) &&
	    json_object_is_type(v, json_type_object)) {
		json_object_put(extra);
		extra = NULL;
		json_object_deep_copy(v, &extra, NULL);
	}
	for (size_t i = 0; i < a->o.nextra; i++)
		add_extra(extra, a->o.extra[i], ns);
	if (json_object_object_length(extra))
		json_object_object_add(spec, "extra", extra);
	else
		json_object_put(extra);
	json_object_object_add(body, "spec", spec);
	/* the key is the review itself: user, uid, groups, extra, object */
	key = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	e = cache_find(a, key, now);
	if (e) {
		ret = e->allowed;
		goto out;
	}
	a->st.access_reviews++;
	ret = post_review(a, ACCESS_REVIEW_PATH, body, &st, msg, len);
	if (ret)
		goto out;
	e = cache_put(a, key, now);
	ret = json_object_object_get_ex(st, "allowed", &v) &&
	      json_object_get_boolean(v);
	if (e)
		e->allowed = ret;
out:
	json_object_put(st);
	json_object_put(body);
	return ret;
}

static struct json_object *resource_attrs(const struct msubject *s, bool named)
{
	struct json_object *o = json_object_new_object();

	if (s->ns[0])
		json_object_object_add(o, "namespace",
				       json_object_new_string(s->ns));
	json_object_object_add(o, "verb", json_object_new_string("get"));
	json_object_object_add(o, "group", json_object_new_string(s->group));
	json_object_object_add(o, "resource",
			       json_object_new_string(s->resource));
	if (named)
		json_object_object_add(o, "name",
				       json_object_new_string(s->name));
	return o;
}

static void access_free(struct access *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->n; i++)
		free(x->subj[i]);
	free(x->subj);
	free(x);
}

/* Per subject: namespace-wide first, then the object. */
static int decide_subjects(struct k8s_authz *a, struct json_object *user,
			   char **subs, long nsubs, struct access *x,
			   uint64_t now, char *msg, size_t len)
{
	uint64_t deadline = now + (uint64_t)a->o.budget_ms * 1000000ull;
	char prev[1024] = "", scope[1024], buf[1024];
	int ns_ok = 0;

	for (long i = 0; i < nsubs; i++) {
		struct msubject s;
		int ok;

		/*
		 * The server answers one scrape at a time (its probes too): past
		 * the budget, stop with what is decided so far cached, and let
		 * the next scrape go on from there.
		 */
		if (mono_ns() > deadline) {
			snprintf(msg, len,
				 "authorizing %ld objects takes longer "
				 "than %u ms; the decisions made so far are "
				 "cached: scrape again",
				 nsubs, a->o.budget_ms);
			return -EAGAIN;
		}
		if (!msubject__parse(subs[i], &s, buf, sizeof(buf)))
			continue;
		snprintf(scope, sizeof(scope), "%s\x1f%s\x1f%s", s.group,
			 s.resource, s.ns);
		if (strcmp(scope, prev)) {
			memcpy(prev, scope, sizeof(prev));
			ns_ok = access_review(a, user, "resourceAttributes",
					      resource_attrs(&s, false), s.ns,
					      now, msg, len);
			if (ns_ok < 0)
				return ns_ok;
		}
		ok = ns_ok;
		if (!ok)
			ok = access_review(a, user, "resourceAttributes",
					   resource_attrs(&s, true), s.ns, now,
					   msg, len);
		if (ok < 0)
			return ok;
		if (ok) {
			x->subj[x->n++] = subs[i];
			subs[i] = NULL;
		}
	}
	return 0;
}

static int begin(void *ctx, struct mstore *store, const char *authorization,
		 void **access, char *msg, size_t len)
{
	struct k8s_authz *a = ctx;
	uint64_t now = mono_ns();
	struct json_object *user = NULL, *attrs;
	struct access *x = NULL;
	char **subs = NULL, token[MAX_TOKEN];
	const char *t;
	long nsubs = 0;
	int ret, status;

	*access = NULL;
	if (!authorization || strncasecmp(authorization, "Bearer ", 7)) {
		snprintf(msg, len,
			 "unauthorized: send Authorization: Bearer "
			 "TOKEN, e.g. a service-account token from kubectl "
			 "create token");
		return 401;
	}
	for (t = authorization + 7; *t == ' '; t++)
		;
	if (!*t || strlen(t) >= sizeof(token)) {
		snprintf(msg, len,
			 "unauthorized: empty or oversized bearer token");
		return 401;
	}
	snprintf(token, sizeof(token), "%s", t);
	for (char *e = token + strlen(token); e > token && e[-1] == ' ';)
		*--e = 0;
	pthread_mutex_lock(&a->lock);
	ret = token_review(a, token, now, &user, msg, len);
	if (ret) {
		status = ret == -ENOMEM ? 500 : 503;
		goto out;
	}
	if (!user) {
		snprintf(msg, len,
			 "unauthorized: the Kubernetes API does not "
			 "authenticate this token");
		status = 401;
		goto out;
	}
	/* the caller's own reference: the cache may evict the entry */
	user = json_object_get(user);
	attrs = json_object_new_object();
	json_object_object_add(attrs, "path",
			       json_object_new_string(FULL_ACCESS_PATH));
	json_object_object_add(attrs, "verb", json_object_new_string("get"));
	ret = access_review(a, user, "nonResourceAttributes", attrs, NULL, now,
			    msg, len);
	if (ret < 0) {
		status = 503;
		goto out;
	}
	if (ret) {
		status = 200; /* everything */
		goto out;
	}
	/* outside the cache lock: the store is the data path's */
	pthread_mutex_unlock(&a->lock);
	nsubs = mstore__subjects(store, &subs);
	pthread_mutex_lock(&a->lock);
	x = calloc(1, sizeof(*x));
	if (nsubs < 0 || !x ||
	    !(x->subj = calloc((size_t)nsubs + 1, sizeof(*x->subj)))) {
		status = 500;
		snprintf(msg, len, "out of memory");
		goto out;
	}
	if (decide_subjects(a, user, subs, nsubs, x, now, msg, len)) {
		status = 503;
		goto out;
	}
	if (!x->n) {
		snprintf(
			msg, len,
			"forbidden: you may get none of the objects "
			"these metrics are about, nor the non-resource URL " FULL_ACCESS_PATH);
		status = 403;
		goto out;
	}
	*access = x;
	x = NULL;
	status = 200;
out:
	pthread_mutex_unlock(&a->lock);
	json_object_put(user);
	access_free(x);
	for (long i = 0; i < nsubs; i++)
		free(subs[i]);
	free(subs);
	return status;
}

static int cmp_subj(const void *k, const void *m)
{
	return strcmp(k, *(char *const *)m);
}

static bool keep(void *access, const char *subject)
{
	struct access *x = access;

	/* bound to nothing single: a reader of everything only */
	return subject &&
	       bsearch(subject, x->subj, x->n, sizeof(*x->subj), cmp_subj);
}

static void end(void *access)
{
	access_free(access);
}

bool k8s_authz__valid_extra(const char *kv, char *err, size_t errlen)
{
	const char *eq = kv ? strchr(kv, '=') : NULL;

	if (!eq || eq == kv || eq - kv >= 256 || strlen(eq + 1) >= 400) {
		snprintf(err, errlen,
			 "extra field \"%s\": write KEY=VALUE, "
			 "e.g. iam.miloapis.com/parent-type=Project",
			 kv ? kv : "");
		return false;
	}
	return true;
}

struct k8s_authz *k8s_authz__new(const struct k8s_authz_opts *opts, char *err,
				 size_t errlen)
{
	struct k8s_authz *a = calloc(1, sizeof(*a));

	if (!a) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&a->lock, NULL);
	a->o = *opts;
	if (!a->o.ttl_s)
		a->o.ttl_s = 30;
	if (!a->o.max_entries)
		a->o.max_entries = 10000;
	if (!a->o.timeout_s)
		a->o.timeout_s = 5;
	if (!a->o.budget_ms)
		a->o.budget_ms = 5000;
	for (size_t i = 0; i < a->o.nextra; i++)
		if (!k8s_authz__valid_extra(a->o.extra[i], err, errlen))
			goto fail;
	for (a->nb = 64; a->nb < a->o.max_entries; a->nb *= 2)
		;
	a->tab = calloc(a->nb, sizeof(*a->tab));
	a->http = k8s_http__new(opts->cfg,
				opts->user_agent ? opts->user_agent
						 : "milometer-authz",
				NULL, NULL);
	if (!a->tab || !a->http) {
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	a->hooks = (struct prom_auth){
		.begin = begin, .keep = keep, .end = end, .ctx = a
	};
	return a;
fail:
	k8s_authz__free(a);
	return NULL;
}

void k8s_authz__free(struct k8s_authz *a)
{
	if (!a)
		return;
	while (a->oldest)
		entry_unlink(a, a->oldest);
	free(a->tab);
	k8s_http__free(a->http);
	pthread_mutex_destroy(&a->lock);
	free(a);
}

const struct prom_auth *k8s_authz__prom_auth(struct k8s_authz *a)
{
	return &a->hooks;
}

void k8s_authz__stats(struct k8s_authz *a, struct k8s_authz_stats *st)
{
	pthread_mutex_lock(&a->lock);
	*st = a->st;
	pthread_mutex_unlock(&a->lock);
}
