// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "agent/k8s/config.h"
#include "agent/k8s/http.h"
#include "agent/k8s/json_stream.h"
#include "agent/k8s/reflector.h"
#include "agent/k8s/store.h"
#define LOG_MODULE "k8s"
#include "policy/util/log.h"

#define RESET_AFTER_S  120             /* client-go: 2 min */
#define SHORT_WATCH_NS (1000000000ULL) /* VeryShortWatchError */

enum watch_end {
	W_CLEAN,  /* the server ended it: re-watch from the last RV */
	W_GONE,   /* 410: relist */
	W_RETRY,  /* back off, re-watch without a relist */
	W_RELIST, /* back off, relist */
	W_STOP,
};

struct k8s_reflector {
	struct k8s_reflector_opts o;
	struct k8s_reflector_stats st;
	struct k8s_http *http;
	struct k8s_jstream *js;
	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	char rv[64];         /* last resourceVersion seen */
	bool rv_unavailable; /* the last list at rv said 410: use "" */
	bool backed_off;     /* since the last watch opened */
	bool gone_again;     /* the last watch ended with 410 too */
	/* backoff (client-go wait.Backoff with a reset) */
	uint64_t backoff_ms;
	uint64_t last_backoff_ns;
	/* state of the watch being read */
	uint64_t wevents;
	int werr_code;    /* code of an in-stream ERROR Status */
	int wdecode;      /* -EBADMSG / -E2BIG from the framer */
	int logged_state; /* the state last logged (quiet retries) */
	unsigned int seed;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

const char *k8s_watch_state__name(enum k8s_watch_state s)
{
	static const char *const n[K8S_W__N] = {
		"starting", "listing",   "watching",     "backoff",
		"absent",   "forbidden", "unauthorized",
	};

	return s < K8S_W__N ? n[s] : "?";
}

const char *k8s_err__name(enum k8s_err e)
{
	static const char *const n[K8S_E__N] = {
		"401", "403", "404",       "410",    "429",
		"5xx", "4xx", "transport", "decode",
	};

	return e < K8S_E__N ? n[e] : "?";
}

static const char *res_name(const struct k8s_resource *r, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s", r->plural, r->group[0] ? "." : "",
		 r->group);
	return buf;
}

static void set_state(struct k8s_reflector *r, enum k8s_watch_state s)
{
	r->st.state = s;
}

static void count_status(struct k8s_reflector *r, long code)
{
	enum k8s_err e;

	switch (code) {
	case 401:
		e = K8S_E_401;
		break;
	case 403:
		e = K8S_E_403;
		break;
	case 404:
		e = K8S_E_404;
		break;
	case 410:
		e = K8S_E_410;
		break;
	case 429:
		e = K8S_E_429;
		break;
	default:
		e = code >= 500 ? K8S_E_5XX : K8S_E_4XX;
		break;
	}
	r->st.errors[e]++;
}

/* Sleep up to ms unless stopped; returns true when stopped. */
static bool nap(struct k8s_reflector *r, uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&r->lock);
	while (!r->stop && pthread_cond_timedwait(&r->cond, &r->lock, &ts) == 0)
		;
	pthread_mutex_unlock(&r->lock);
	return r->stop;
}

/*
 * client-go's backoff: 0.8 s doubling to 30 s, jitter 1.0 (a wait is drawn
 * from [d, 2d)), back to 0.8 s after two minutes without a backoff. The
 * server's Retry-After wins when longer.
 */
static bool back_off(struct k8s_reflector *r, uint32_t retry_after_s)
{
	uint64_t now = mono_ns(), d, wait;
	uint64_t init = r->o.backoff_initial_ms, max = r->o.backoff_max_ms;

	if (!r->backoff_ms ||
	    now - r->last_backoff_ns > r->o.backoff_reset_s * 1000000000ULL)
		r->backoff_ms = init;
	d = r->backoff_ms;
	wait = d +
	       (uint64_t)((double)d * (rand_r(&r->seed) / (RAND_MAX + 1.0)));
	if (wait > max)
		wait = max;
	if (retry_after_s && retry_after_s * 1000ULL > wait)
		wait = retry_after_s * 1000ULL;
	r->backoff_ms = d * 2 > max ? max : d * 2;
	r->last_backoff_ns = now;
	r->backed_off = true;
	r->st.backoff_ms = wait;
	if (r->st.state == K8S_W_LISTING || r->st.state == K8S_W_WATCHING)
		set_state(r, K8S_W_BACKOFF);
	return nap(r, wait);
}

static const char *str_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *x, *y;

	if (!json_object_object_get_ex(o, a, &x))
		return NULL;
	if (!b)
		return json_object_is_type(x, json_type_string)
			       ? json_object_get_string(x)
			       : NULL;
	if (!json_object_object_get_ex(x, b, &y) ||
	    !json_object_is_type(y, json_type_string))
		return NULL;
	return json_object_get_string(y);
}

/*
 * Keep what consumers read: typed lists leave kind/apiVersion out of their
 * items, and managedFields and kubectl's last-applied copy only cost
 * memory (OBI strips its informer objects the same way).
 */
static void normalise(struct k8s_reflector *r, struct json_object *o)
{
	const struct k8s_resource *res = r->o.res;
	struct json_object *m, *ann;
	char av[256];

	if (!str_at(o, "kind", NULL))
		json_object_object_add(o, "kind",
				       json_object_new_string(res->kind));
	if (!str_at(o, "apiVersion", NULL)) {
		snprintf(av, sizeof(av), "%s%s%s", res->group,
			 res->group[0] ? "/" : "", res->version);
		json_object_object_add(o, "apiVersion",
				       json_object_new_string(av));
	}
	if (json_object_object_get_ex(o, "metadata", &m)) {
		json_object_object_del(m, "managedFields");
		if (json_object_object_get_ex(m, "annotations", &ann))
			json_object_object_del(
				ann,
				"kubectl.kubernetes.io/last-applied-configuration");
	}
}

static void base_path(struct k8s_reflector *r, char *buf, size_t len)
{
	const struct k8s_resource *res = r->o.res;

	if (res->group[0])
		snprintf(buf, len, "/apis/%s/%s/%s?", res->group, res->version,
			 res->plural);
	else
		snprintf(buf, len, "/api/%s/%s?", res->version, res->plural);
}

static void add_q(char *buf, size_t len, const char *k, const char *v)
{
	size_t n = strlen(buf);
	char *e = curl_easy_escape(NULL, v, 0);

	snprintf(buf + n, len - n, "%s%s=%s", buf[n - 1] == '?' ? "" : "&", k,
		 e ? e : "");
	curl_free(e);
}

static void add_selectors(struct k8s_reflector *r, char *buf, size_t len)
{
	if (r->o.res->field_selector)
		add_q(buf, len, "fieldSelector", r->o.res->field_selector);
	if (r->o.res->label_selector)
		add_q(buf, len, "labelSelector", r->o.res->label_selector);
}

/* One line for what the operator must fix; then quiet until it changes. */
static void log_state(struct k8s_reflector *r, enum k8s_watch_state s,
		      const char *verb, const char *detail)
{
	char rn[256];
	const struct k8s_resource *res = r->o.res;

	set_state(r, s);
	if (r->logged_state == (int)s)
		return;
	r->logged_state = s;
	res_name(res, rn, sizeof(rn));
	switch (s) {
	case K8S_W_FORBIDDEN:
		pr_warn("RBAC forbids %s on %s: grant verb \"%s\" on resource \"%s\" in API group \"%s\" to the agent's service account (ClusterRole); retrying quietly\n",
			verb, rn, verb, res->plural, res->group);
		break;
	case K8S_W_ABSENT:
		pr_warn("%s/%s %s is not served (CRD not installed?); watching for it quietly\n",
			res->group[0] ? res->group : "core", res->version,
			res->plural);
		break;
	case K8S_W_UNAUTHORIZED:
		pr_err("%s: 401 Unauthorized even with a freshly read token: check the token or client certificate in the kubeconfig/service account\n",
		       rn);
		break;
	case K8S_W_WATCHING:
		if (detail)
			pr_info("%s: %s\n", rn, detail);
		break;
	default:
		break;
	}
}

enum list_result { L_OK, L_GONE, L_ERR, L_ABSENT, L_STOP };

/* Decide what a failed request means; sets the state. */
static enum list_result judge(struct k8s_reflector *r, int ret,
			      struct k8s_resp *resp, const char *verb)
{
	if (r->stop)
		return L_STOP;
	if (ret < 0) {
		r->st.errors[ret == -EFBIG ? K8S_E_DECODE : K8S_E_TRANSPORT]++;
		return L_ERR;
	}
	count_status(r, resp->status);
	switch (resp->status) {
	case 410:
		return L_GONE;
	case 404:
		log_state(r, K8S_W_ABSENT, verb, NULL);
		return L_ABSENT;
	case 403:
		log_state(r, K8S_W_FORBIDDEN, verb, NULL);
		return L_ERR;
	case 401:
		log_state(r, K8S_W_UNAUTHORIZED, verb, NULL);
		return L_ERR;
	default:
		return L_ERR;
	}
}

/* LIST, all pages, then replace the store. */
static enum list_result do_list(struct k8s_reflector *r, uint32_t *retry_after)
{
	struct json_object *all = json_object_new_array(), *page = NULL;
	char path[4096], cont[4096] = "", newrv[64] = "";
	const char *rv = r->rv_unavailable ? "" : (r->rv[0] ? r->rv : "0");
	/* client-go pages only lists served from the watch cache or quorum
	 * reads; an RV of N with a limit would mean "exactly N" */
	bool paged = !strcmp(rv, "0") || !rv[0];
	enum list_result lr = L_OK;
	struct k8s_resp resp = {};
	int ret;

	if (!all)
		return L_ERR;
	set_state(r, K8S_W_LISTING);
	*retry_after = 0;
	do {
		struct k8s_req req = { .method = "GET",
				       .path = path,
				       .timeout_s = 60 };
		struct json_object *items, *meta, *c;

		base_path(r, path, sizeof(path));
		add_selectors(r, path, sizeof(path));
		if (cont[0]) {
			add_q(path, sizeof(path), "continue", cont);
		} else {
			add_q(path, sizeof(path), "resourceVersion", rv);
		}
		if (paged) {
			char lim[16];

			snprintf(lim, sizeof(lim), "%u", r->o.page_size);
			add_q(path, sizeof(path), "limit", lim);
		}
		ret = k8s_http__do(r->http, &req, &resp);
		if (ret || resp.status != 200) {
			*retry_after = resp.retry_after;
			if (!ret && resp.status == 410 && cont[0]) {
				/* the continue token expired: a whole new list */
				count_status(r, 410);
				json_object_put(all);
				all = json_object_new_array();
				cont[0] = 0;
				rv = "";
				if (!all) {
					lr = L_ERR;
					break;
				}
				continue;
			}
			lr = judge(r, ret, &resp, "list");
			break;
		}
		page = json_tokener_parse(resp.body);
		if (!page ||
		    !json_object_object_get_ex(page, "items", &items) ||
		    !json_object_is_type(items, json_type_array)) {
			/* "items": null is an empty list in Go's encoding */
			if (page &&
			    json_object_object_get_ex(page, "items", &items) &&
			    !items) {
				items = NULL;
			} else {
				r->st.errors[K8S_E_DECODE]++;
				lr = L_ERR;
				break;
			}
		}
		for (size_t i = 0; items && i < json_object_array_length(items);
		     i++) {
			struct json_object *o =
				json_object_array_get_idx(items, i);

			normalise(r, o);
			json_object_array_add(all, json_object_get(o));
		}
		cont[0] = 0;
		if (json_object_object_get_ex(page, "metadata", &meta)) {
			const char *v = str_at(meta, "resourceVersion", NULL);

			if (v)
				snprintf(newrv, sizeof(newrv), "%s", v);
			if (json_object_object_get_ex(meta, "continue", &c) &&
			    json_object_get_string_len(c))
				snprintf(cont, sizeof(cont), "%s",
					 json_object_get_string(c));
		}
		json_object_put(page);
		page = NULL;
	} while (cont[0] && !r->stop);
	if (lr == L_OK && r->stop)
		lr = L_STOP;
	if (lr == L_OK) {
		k8s_store__replace(r->o.store, all);
		snprintf(r->rv, sizeof(r->rv), "%s", newrv);
		r->rv_unavailable = false;
		if (r->st.synced)
			r->st.relists++;
		r->st.lists++;
		r->st.synced = true;
		r->st.last_sync_ns = mono_ns();
		r->st.objects = k8s_store__count(r->o.store);
		if (r->logged_state == K8S_W_ABSENT ||
		    r->logged_state == K8S_W_FORBIDDEN ||
		    r->logged_state == K8S_W_UNAUTHORIZED) {
			char rn[256];

			pr_info("%s: listed %zu objects, watching\n",
				res_name(r->o.res, rn, sizeof(rn)),
				(size_t)r->st.objects);
		}
		r->logged_state = -1;
	} else if (lr == L_GONE) {
		r->rv_unavailable = true;
	} else if (lr == L_ABSENT && k8s_store__count(r->o.store)) {
		/* the CRD went away: its objects went with it */
		struct json_object *none = json_object_new_array();

		if (none)
			k8s_store__replace(r->o.store, none);
		json_object_put(none);
		r->st.objects = 0;
	}
	json_object_put(page);
	json_object_put(all);
	k8s_http__resp_free(&resp);
	return lr;
}

static int on_event(struct json_object *ev, void *ctx)
{
	struct k8s_reflector *r = ctx;
	const char *type = str_at(ev, "type", NULL), *rv;
	struct json_object *obj = NULL;
	int ret = 0;

	json_object_object_get_ex(ev, "object", &obj);
	if (!type || !obj || !json_object_is_type(obj, json_type_object)) {
		r->wdecode = -EBADMSG;
		ret = 1;
		goto out;
	}
	if (!strcmp(type, "ERROR")) {
		struct json_object *code;

		r->werr_code = json_object_object_get_ex(obj, "code", &code)
				       ? json_object_get_int(code)
				       : 500;
		ret = 1;
		goto out;
	}
	rv = str_at(obj, "metadata", "resourceVersion");
	if (!strcmp(type, "BOOKMARK")) {
		r->st.bookmarks++;
	} else {
		normalise(r, obj);
		if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED"))
			k8s_store__upsert(r->o.store, obj);
		else if (!strcmp(type, "DELETED"))
			k8s_store__delete(r->o.store, obj);
		else
			goto out; /* unknown types are ignored, as client-go does */
		r->st.events++;
		r->wevents++;
		r->st.objects = k8s_store__count(r->o.store);
	}
	if (rv)
		snprintf(r->rv, sizeof(r->rv), "%s", rv);
	r->st.last_sync_ns = mono_ns();
out:
	json_object_put(ev);
	return ret;
}

/*
 * The state says "watching" only once the server answered the watch: a
 * watch refused or hanging in connect is not up, whatever was asked.
 */
static void on_watch_open(long status, void *ctx)
{
	struct k8s_reflector *r = ctx;

	if (status != 200)
		return;
	set_state(r, K8S_W_WATCHING);
	r->st.watch_up = true;
	if (r->backed_off)
		r->st.watch_restarts++;
	r->backed_off = false;
}

static int on_watch_data(const char *buf, size_t len, void *ctx)
{
	struct k8s_reflector *r = ctx;
	int ret = k8s_jstream__feed(r->js, buf, len, on_event, r);

	if (ret < 0)
		r->wdecode = ret;
	return ret != 0;
}

static enum watch_end do_watch(struct k8s_reflector *r, uint32_t *retry_after)
{
	char path[4096], to[16];
	uint32_t min = r->o.min_watch_s;
	uint32_t t = min + rand_r(&r->seed) % (min + 1); /* [min, 2*min] */
	struct k8s_req req = { .method = "GET",
			       .path = path,
			       .on_data = on_watch_data,
			       .on_open = on_watch_open,
			       .ctx = r,
			       .idle_timeout_s = r->o.idle_timeout_s };
	struct k8s_resp resp = {};
	uint64_t t0 = mono_ns();
	enum watch_end we;
	int ret;

	base_path(r, path, sizeof(path));
	add_selectors(r, path, sizeof(path));
	add_q(path, sizeof(path), "watch", "true");
	add_q(path, sizeof(path), "resourceVersion", r->rv);
	add_q(path, sizeof(path), "allowWatchBookmarks", "true");
	snprintf(to, sizeof(to), "%u", t);
	add_q(path, sizeof(path), "timeoutSeconds", to);
	k8s_jstream__reset(r->js);
	r->wevents = 0;
	r->werr_code = 0;
	r->wdecode = 0;
	r->st.watches++;
	*retry_after = 0;
	ret = k8s_http__do(r->http, &req, &resp);
	r->st.watch_up = false;
	if (r->stop) {
		we = W_STOP;
	} else if (r->werr_code) {
		count_status(r, r->werr_code);
		/* the watch cache answers a too-old RV in the stream */
		we = r->werr_code == 410 ? W_GONE : W_RELIST;
	} else if (r->wdecode) {
		char rn[256];

		r->st.errors[K8S_E_DECODE]++;
		pr_warn("%s watch: %s; relisting\n",
			res_name(r->o.res, rn, sizeof(rn)),
			r->wdecode == -E2BIG ? "an object over the size cap"
					     : "an event that is not JSON");
		we = W_RELIST;
	} else if (ret < 0) {
		/* refused, reset, idle: the RV is still good (client-go
		 * isWatchErrorRetriable) */
		r->st.errors[K8S_E_TRANSPORT]++;
		we = W_RETRY;
	} else if (resp.status != 200) {
		*retry_after = resp.retry_after;
		count_status(r, resp.status);
		if (resp.status == 410)
			we = W_GONE;
		else if (resp.status == 429)
			we = W_RETRY;
		else
			we = W_RELIST;
	} else if (!r->wevents && mono_ns() - t0 < SHORT_WATCH_NS) {
		/* "very short watch": the server is not really serving */
		we = W_RETRY;
	} else {
		we = k8s_jstream__pending(r->js) ? W_RETRY : W_CLEAN;
	}
	k8s_http__resp_free(&resp);
	return we;
}

static void *run(void *arg)
{
	struct k8s_reflector *r = arg;
	uint32_t ra;

	while (!r->stop) {
		enum list_result lr = do_list(r, &ra);

		if (lr == L_STOP)
			break;
		if (lr != L_OK) {
			if (back_off(r, ra))
				break;
			continue;
		}
		for (;;) {
			enum watch_end we = do_watch(r, &ra);

			if (we == W_STOP || r->stop)
				goto out;
			if (we != W_GONE)
				r->gone_again = false;
			if (we == W_CLEAN)
				continue;
			if (we == W_GONE) {
				/*
				 * Relist at the last RV (the list falls back to ""
				 * if that is gone too), at once: the server
				 * answered, and after an API server restart every
				 * watch lands here, where waiting out the backoff
				 * built up while it was away would double the
				 * outage. A second 410 in a row backs off.
				 */
				if (r->gone_again && back_off(r, ra))
					goto out;
				r->gone_again = true;
				break;
			}
			if (back_off(r, ra))
				goto out;
			if (we == W_RELIST)
				break;
		}
	}
out:
	return NULL;
}

struct k8s_reflector *k8s_reflector__start(const struct k8s_reflector_opts *o)
{
	struct k8s_reflector *r = calloc(1, sizeof(*r));
	char ua[256];

	if (!r)
		return NULL;
	r->o = *o;
	if (!r->o.page_size)
		r->o.page_size = 500;
	if (!r->o.min_watch_s)
		r->o.min_watch_s = 300;
	if (!r->o.max_object_bytes)
		r->o.max_object_bytes = 4u << 20;
	if (!r->o.backoff_initial_ms)
		r->o.backoff_initial_ms = 800;
	if (!r->o.backoff_max_ms)
		r->o.backoff_max_ms = 30000;
	if (!r->o.idle_timeout_s)
		r->o.idle_timeout_s = 150;
	if (!r->o.backoff_reset_s)
		r->o.backoff_reset_s = RESET_AFTER_S;
	/* tests shorten the healthy stretch that resets the backoff */
	if (getenv("MILOMETER_K8S_BACKOFF_RESET_S"))
		r->o.backoff_reset_s = strtoul(
			getenv("MILOMETER_K8S_BACKOFF_RESET_S"), NULL, 10);
	r->seed = (unsigned int)(mono_ns() ^ (uintptr_t)r);
	r->logged_state = -1;
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	snprintf(ua, sizeof(ua), "%s",
		 o->user_agent ? o->user_agent : "milometer");
	r->http = k8s_http__new(o->cfg, ua, &r->stop, o->http_stats);
	r->js = k8s_jstream__new(r->o.max_object_bytes);
	if (!r->http || !r->js || pthread_create(&r->thread, NULL, run, r)) {
		k8s_reflector__free(r);
		return NULL;
	}
	r->started = true;
	return r;
}

void k8s_reflector__stop(struct k8s_reflector *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stop = true;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
}

void k8s_reflector__free(struct k8s_reflector *r)
{
	if (!r)
		return;
	k8s_reflector__stop(r);
	if (r->started)
		pthread_join(r->thread, NULL);
	k8s_http__free(r->http);
	k8s_jstream__free(r->js);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}

struct k8s_reflector_stats *k8s_reflector__stats(struct k8s_reflector *r)
{
	return &r->st;
}

const struct k8s_resource *
k8s_reflector__resource(const struct k8s_reflector *r)
{
	return r->o.res;
}
