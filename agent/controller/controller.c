// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "agent/k8s/api_source.h"
#include "agent/authz/authz.h"
#include "agent/controller/controller.h"
#include "agent/controller/controller_translate.h"
#include "agent/k8s/http.h"
#include "agent/metrics/k8s_metrics.h"
#include "agent/k8s/lease.h"
#include "policy/model/metric_store.h"
#include "exporter/prom_server.h"
#include "exporter/route_view.h"
#include "exporter/ui_pages.h"
#include "policy/contract/cluster_id.h"
#include "policy/contract/conditions.h"
#include "policy/contract/contract.h"
#include "agent/metrics/contract_metrics.h"
#include "policy/contract/policy_engine.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"
#define LOG_MODULE "controller"
#include "policy/util/log.h"

#define FIELD_MANAGER  "milometer"
#define CRD_GROUP_PATH "/apis/telemetry.miloapis.com/v1alpha1"
/*
 * ResourceFields series: set by the leader every COLLECT_S seconds, gone
 * from a replica's /metrics IDLE_S after it stopped leading (the new leader
 * has them by then), as they go when their object does.
 */
#define COLLECT_S 5
#define IDLE_S    20

static volatile sig_atomic_t stopping;

static void on_signal(int s)
{
	stopping = 1;
}

struct ctrl {
	struct k8s_api *api;
	struct k8s_http *http;
	struct manifest_source *src;
	struct contract *contract;
	struct mstore *store; /* ResourceFields series (leader) */
	struct policy_engine *engine;
	struct prom_server *prom;
	struct k8s_metrics *k8sm; /* milometer_k8s_*: the watches' health */
	int contract_id;          /* milometer_contract_objects */
	atomic_bool loaded;       /* the contract was read once */
	struct k8s_authz *authz;  /* --metrics-auth kubernetes */
	struct ui *ui;            /* /ui beside /metrics */
	const char *ui_prom_url;  /* where /ui reads from, NULL: the store */
	pthread_mutex_t ci_lock;  /* cluster id: the scrape thread reads it */
	struct cluster_identity ci;
	uint64_t writes, write_errors;
	struct ctrl_translate tr; /* --translate */
};

static uint64_t real_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* k8s.cluster.id (and clusterset) on every series, as the agents add them */
/* /readyz: 503 until every watch listed once and the contract was read */
static int ctrl_ready(void *ctx, char *why, size_t len)
{
	struct ctrl *c = ctx;

	if (!k8s_api__synced(c->api, why, len))
		return 1;
	if (!atomic_load(&c->loaded)) {
		snprintf(why, len,
			 "reading MetricDefinitions and MetricPolicies");
		return 1;
	}
	return 0;
}

static void ctrl_before_collect(void *ctx)
{
	struct ctrl *c = ctx;

	mstore__lock(c->store);
	k8s_metrics__refresh(c->k8sm, c->api, real_ns());
	if (c->contract_id >= 0)
		contract_metrics__set(c->contract, c->store, c->contract_id,
				      real_ns());
	mstore__unlock(c->store);
}

static size_t cluster_labels(void *ctx, struct mlabel *out, size_t max,
			     char *buf, size_t buflen)
{
	struct ctrl *c = ctx;
	struct mlabel l[2];
	size_t n, k = 0, used = 0;

	pthread_mutex_lock(&c->ci_lock);
	n = cluster_id__attrs(&c->ci, l);
	for (size_t i = 0; i < n && k < max && used < buflen; i++) {
		int w = snprintf(buf + used, buflen - used, "%s", l[i].value);

		out[k++] = (struct mlabel){ l[i].key, buf + used };
		used += (size_t)w + 1;
	}
	pthread_mutex_unlock(&c->ci_lock);
	return k;
}

/* /ui: the agents' series through Prometheus, else this process' own. */
static int ui_fetch(void *ctx, struct rt_snap *snap, char *err, size_t errlen)
{
	struct ctrl *c = ctx;

	if (c->ui_prom_url)
		return rt_snap__from_prometheus(snap, c->ui_prom_url, "1m", err,
						errlen);
	return rt_snap__from_store(snap, c->store, real_ns());
}

static void reload(struct ctrl *c)
{
	struct cluster_identity ci = {};

	contract__load(c->contract, c->src);
	policy_engine__sync(c->engine, c->src);
	ctrl_translate__render(&c->tr, c->contract, c->engine);
	contract__cluster(c->contract, &ci);
	pthread_mutex_lock(&c->ci_lock);
	c->ci = ci;
	pthread_mutex_unlock(&c->ci_lock);
}

static void rfc3339(uint64_t real_ns, char *buf, size_t len)
{
	time_t t = real_ns / 1000000000ULL;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static const struct doc_node *find_cond(const struct doc_node *list,
					const char *type)
{
	for (size_t i = 0; list && list->kind == DOC_LIST && i < list->list.n;
	     i++) {
		const char *t = doc__str(list->list.items[i], "type");

		if (t && !strcmp(t, type))
			return list->list.items[i];
	}
	return NULL;
}

static bool str_is(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

static bool owned_type(const struct ctrl *c, const char *t)
{
	/* Programmed is per node: the agents' self-metrics say it */
	return str_is(t, COND_ACCEPTED) || str_is(t, COND_RESOLVED_REFS) ||
	       (c->tr.n && str_is(t, COND_TRANSLATED));
}

/* Write one object's status when its conditions differ from ours. */
static void sync_one(struct ctrl *c, const struct mobject *o,
		     const char *plural)
{
	const struct doc_node *cur = doc__path(o->root, "status.conditions");
	const struct doc_node *gen = doc__path(o->root, "metadata.generation");
	int64_t g = gen && gen->kind == DOC_INT ? gen->i : 0;
	struct json_object *body, *meta, *st, *list;
	struct k8s_resp resp = {};
	struct k8s_req req = { .method = "PATCH",
			       .timeout_s = 10,
			       .content_type = "application/apply-patch+yaml" };
	struct cond_set cs;
	size_t want = 0, have = 0, same = 0;
	char path[1024], now[32];
	int ret;

	if (!o->name ||
	    contract__conditions(c->contract, o->kind, o->name, &cs))
		return;
	rfc3339((uint64_t)time(NULL) * 1000000000ULL, now, sizeof(now));
	body = json_object_new_object();
	meta = json_object_new_object();
	st = json_object_new_object();
	list = json_object_new_array();
	json_object_object_add(body, "apiVersion",
			       json_object_new_string(o->api_version));
	json_object_object_add(body, "kind", json_object_new_string(o->kind));
	json_object_object_add(meta, "name", json_object_new_string(o->name));
	json_object_object_add(body, "metadata", meta);
	json_object_object_add(body, "status", st);
	json_object_object_add(st, "conditions", list);
	for (size_t i = 0; i < cs.n; i++) {
		const struct condition *k = &cs.c[i];
		const struct doc_node *old = find_cond(cur, k->type);
		const struct doc_node *og =
			old ? doc__get(old, "observedGeneration") : NULL;
		const char *status = conditions__status_str(k->status);
		const char *ltt = now;
		struct json_object *j;

		if (!owned_type(c, k->type))
			continue;
		want++;
		if (old && str_is(doc__str(old, "status"), status)) {
			if (doc__str(old, "lastTransitionTime"))
				ltt = doc__str(old, "lastTransitionTime");
			if (str_is(doc__str(old, "reason"), k->reason) &&
			    str_is(doc__str(old, "message"), k->message) &&
			    og && og->kind == DOC_INT && og->i == g)
				same++;
		}
		j = json_object_new_object();
		json_object_object_add(j, "type",
				       json_object_new_string(k->type));
		json_object_object_add(j, "status",
				       json_object_new_string(status));
		json_object_object_add(j, "observedGeneration",
				       json_object_new_int64(g));
		json_object_object_add(j, "lastTransitionTime",
				       json_object_new_string(ltt));
		json_object_object_add(j, "reason",
				       json_object_new_string(k->reason));
		json_object_object_add(j, "message",
				       json_object_new_string(k->message));
		json_object_array_add(list, j);
	}
	for (size_t i = 0; cur && cur->kind == DOC_LIST && i < cur->list.n; i++)
		have += owned_type(c, doc__str(cur->list.items[i], "type"));
	if (want == same && have == want)
		goto out; /* never rewrite what did not change */
	snprintf(path, sizeof(path),
		 CRD_GROUP_PATH "/%s/%s/status?fieldManager=" FIELD_MANAGER
				"&force=true",
		 plural, o->name);
	req.path = path;
	req.body = json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN);
	req.body_len = strlen(req.body);
	ret = k8s_http__do(c->http, &req, &resp);
	if (!ret && resp.status == 200) {
		c->writes++;
		pr_info("%s %s status written (generation %lld)\n", o->kind,
			o->name, (long long)g);
	} else {
		c->write_errors++;
		pr_err("writing %s %s status failed: %s%ld %s\n", o->kind,
		       o->name, ret ? resp.error : "HTTP ",
		       ret ? 0L : resp.status, resp.body ? resp.body : "");
	}
out:
	k8s_http__resp_free(&resp);
	json_object_put(body);
}

static void sync_all(struct ctrl *c)
{
	const struct mobject *o = NULL;

	while ((o = manifest_source__next(c->src, "MetricDefinition", o)))
		sync_one(c, o, "metricdefinitions");
	o = NULL;
	while ((o = manifest_source__next(c->src, "MetricPolicy", o)))
		sync_one(c, o, "metricpolicies");
}

void controller__defaults(struct controller_opts *o)
{
	*o = (struct controller_opts){
		.ns = getenv("POD_NAMESPACE"),
		.identity = getenv("POD_NAME"),
		.lease_name = "milometer-controller",
		.listen = "127.0.0.1:9465",
		.auth = "none",
		.authz = { .user_agent = "milometer-controller-authz" },
	};
}

int controller__run(struct controller_opts *o)
{
	const char *ns = o->ns, *id = o->identity;
	const char *listen = o->listen, *auth = o->auth;
	struct mstore_opts so = { .idle_expiry_ns = IDLE_S * 1000000000ULL };
	struct k8s_api_opts ao = {};
	struct k8s_authz_opts zo = o->authz;
	struct k8s_lease *lease = NULL;
	struct ctrl c = { .ci_lock = PTHREAD_MUTEX_INITIALIZER,
			  .ui_prom_url = o->prom_url,
			  .tr = o->tr };
	char idbuf[300], host[256] = "", ua[400], err[1024];
	bool leader = false;
	uint64_t ticks = 0;
	int ret = 1;

	if (!ns || !ns[0])
		ns = "milometer";
	if (!id || !id[0]) {
		gethostname(host, sizeof(host) - 1);
		snprintf(idbuf, sizeof(idbuf), "%s_%d", host, getpid());
		id = idbuf;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	snprintf(ua, sizeof(ua), "milometer-controller/%s", id);
	ao.kubeconfig = o->kubeconfig;
	ao.user_agent = ua;
	if (k8s_api__start(&ao, &c.api, err, sizeof(err))) {
		pr_err("%s\n", err);
		return 1;
	}
	c.http = k8s_http__new(k8s_api__config(c.api), ua, NULL,
			       k8s_api__http_stats(c.api));
	c.contract = contract__new();
	c.store = mstore__new(&so);
	c.engine = c.store && c.contract
			   ? policy_engine__new(c.store, c.contract)
			   : NULL;
	c.k8sm = c.store ? k8s_metrics__new(c.store) : NULL;
	c.contract_id = -1;
	if (c.k8sm) {
		struct metric_doc cd = CONTRACT_METRICS_OBJECTS_DOC;
		struct mmetric_desc d = metric_doc__desc(&cd);

		c.contract_id = mstore__add_metric(c.store, &d);
	}
	if (!c.http || !c.engine || !c.k8sm)
		goto cleanup;
	if (!strcmp(auth, "kubernetes")) {
		zo.cfg = k8s_api__config(c.api);
		c.authz = k8s_authz__new(&zo, err, sizeof(err));
		if (!c.authz) {
			pr_err("--metrics-auth: %s\n", err);
			goto cleanup;
		}
	}
	/* up before the caches sync: probes see 503 and why, not a refusal */
	if (listen[0]) {
		struct prom_server_opts po = {
			.listen_addr = listen,
			.store = c.store,
			.ready_fn = ctrl_ready,
			.before_collect = ctrl_before_collect,
			.const_labels_fn = cluster_labels,
			.ctx = &c,
			.auth = c.authz ? k8s_authz__prom_auth(c.authz) : NULL,
		};

		c.ui = ui__new(ui_fetch, &c);
		po.pages = ui__pages(c.ui, &po.npages);

		c.prom = prom_server__start(&po, err, sizeof(err));
		if (!c.prom) {
			pr_err("--prometheus-listen %s: %s\n", listen, err);
			goto cleanup;
		}
	}
	k8s_api__wait_synced(c.api, 10000);
	c.src = k8s_api__manifest_source(c.api);
	if (!c.src)
		goto cleanup;
	reload(&c);
	atomic_store(&c.loaded, true);
	{
		struct k8s_lease_opts lo = { .http = c.http,
					     .ns = ns,
					     .name = o->lease_name,
					     .identity = id };

		lease = k8s_lease__new(&lo);
	}
	if (!lease)
		goto cleanup;
	while (!stopping) {
		bool was = leader;
		int r;

		if (ticks % 2 == 0) /* retry period 2 s */
			leader = k8s_lease__try(lease);
		r = manifest_source__reload(c.src);
		if (r > 0)
			reload(&c);
		if (leader && !was)
			ctrl_translate__forget(&c.tr);
		/* a failed write is tried again every 10 s */
		if (leader && (r > 0 || !was || ticks % 10 == 0))
			ctrl_translate__apply(&c.tr, c.http);
		if (leader && (r > 0 || !was))
			sync_all(&c);
		/* one producer: a follower's series age out (IDLE_S) */
		if (leader && (r > 0 || !was || ticks % COLLECT_S == 0))
			policy_engine__collect_resource_fields(c.engine,
							       real_ns());
		ticks++;
		sleep(1);
	}
	ret = 0;
cleanup:
	if (lease) {
		k8s_lease__release(lease);
		k8s_lease__free(lease);
	}
	prom_server__stop(c.prom);
	k8s_metrics__free(c.k8sm);
	k8s_authz__free(c.authz);
	ui__free(c.ui);
	ctrl_translate__free(&c.tr);
	manifest_source__free(c.src);
	policy_engine__free(c.engine);
	mstore__free(c.store);
	contract__free(c.contract);
	k8s_http__free(c.http);
	k8s_api__free(c.api);
	return ret;
}
