// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <json-c/json.h>

#include "agent/k8s/http.h"
#include "agent/k8s/lease.h"
#define LOG_MODULE "k8s"
#include "policy/util/log.h"

struct k8s_lease {
	struct k8s_lease_opts o;
	char path[512];
	bool leader;
	uint64_t last_renew_ns; /* CLOCK_MONOTONIC of our last successful renew */
	char observed[512];     /* holder|renewTime|transitions last seen */
	uint64_t observed_ns;   /* when it last changed, by our clock */
	uint64_t transitions;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* metav1.MicroTime */
static void micro_now(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(buf, len, "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

struct k8s_lease *k8s_lease__new(const struct k8s_lease_opts *o)
{
	struct k8s_lease *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->o = *o;
	if (!l->o.duration_s)
		l->o.duration_s = 15;
	if (!l->o.renew_deadline_s)
		l->o.renew_deadline_s = 10;
	snprintf(l->path, sizeof(l->path),
		 "/apis/coordination.k8s.io/v1/namespaces/%s/leases", o->ns);
	return l;
}

void k8s_lease__free(struct k8s_lease *l)
{
	free(l);
}

uint64_t k8s_lease__transitions(const struct k8s_lease *l)
{
	return l->transitions;
}

static const char *spec_str(struct json_object *spec, const char *k)
{
	struct json_object *v;

	return json_object_object_get_ex(spec, k, &v) &&
			       json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : "";
}

/* Write the lease: POST when obj is NULL, else PUT obj with our holder. */
static bool write_lease(struct k8s_lease *l, struct json_object *obj,
			bool takeover)
{
	struct json_object *spec, *meta;
	char now[64], path[700];
	struct k8s_resp resp = {};
	struct k8s_req req = { .path = path,
			       .timeout_s = 10,
			       .content_type = "application/json" };
	bool created = !obj, ok;
	int ret;

	micro_now(now, sizeof(now));
	if (created) {
		obj = json_object_new_object();
		meta = json_object_new_object();
		json_object_object_add(
			obj, "apiVersion",
			json_object_new_string("coordination.k8s.io/v1"));
		json_object_object_add(obj, "kind",
				       json_object_new_string("Lease"));
		json_object_object_add(meta, "name",
				       json_object_new_string(l->o.name));
		json_object_object_add(meta, "namespace",
				       json_object_new_string(l->o.ns));
		json_object_object_add(obj, "metadata", meta);
		spec = json_object_new_object();
		json_object_object_add(obj, "spec", spec);
		json_object_object_add(spec, "leaseTransitions",
				       json_object_new_int64(0));
		json_object_object_add(spec, "acquireTime",
				       json_object_new_string(now));
	} else {
		json_object_get(obj);
		if (!json_object_object_get_ex(obj, "spec", &spec)) {
			spec = json_object_new_object();
			json_object_object_add(obj, "spec", spec);
		}
		if (takeover) {
			struct json_object *t;
			int64_t n = json_object_object_get_ex(
					    spec, "leaseTransitions", &t)
					    ? json_object_get_int64(t)
					    : 0;

			json_object_object_add(spec, "leaseTransitions",
					       json_object_new_int64(n + 1));
			json_object_object_add(spec, "acquireTime",
					       json_object_new_string(now));
		}
	}
	json_object_object_add(spec, "holderIdentity",
			       json_object_new_string(l->o.identity));
	json_object_object_add(spec, "leaseDurationSeconds",
			       json_object_new_int64(l->o.duration_s));
	json_object_object_add(spec, "renewTime", json_object_new_string(now));
	if (created)
		snprintf(path, sizeof(path), "%s", l->path);
	else
		snprintf(path, sizeof(path), "%s/%s", l->path, l->o.name);
	req.method = created ? "POST" : "PUT";
	req.body = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	req.body_len = strlen(req.body);
	ret = k8s_http__do(l->o.http, &req, &resp);
	/* 409: somebody else created or updated it first */
	ok = !ret && (resp.status == 200 || resp.status == 201);
	if (ok && takeover)
		l->transitions++;
	k8s_http__resp_free(&resp);
	json_object_put(obj);
	return ok;
}

static bool attempt(struct k8s_lease *l)
{
	char path[700], seen[512];
	struct k8s_resp resp = {};
	struct k8s_req req = { .method = "GET", .path = path, .timeout_s = 10 };
	struct json_object *obj = NULL, *spec = NULL, *d;
	const char *holder;
	uint64_t now = mono_ns(), dur;
	bool ok = false;

	snprintf(path, sizeof(path), "%s/%s", l->path, l->o.name);
	if (k8s_http__do(l->o.http, &req, &resp))
		goto out;
	if (resp.status == 404) {
		ok = write_lease(l, NULL, true);
		goto out;
	}
	if (resp.status != 200 || !(obj = json_tokener_parse(resp.body)))
		goto out;
	json_object_object_get_ex(obj, "spec", &spec);
	holder = spec_str(spec, "holderIdentity");
	dur = json_object_object_get_ex(spec, "leaseDurationSeconds", &d)
		      ? json_object_get_int64(d)
		      : l->o.duration_s;
	snprintf(seen, sizeof(seen), "%s|%s|%s", holder,
		 spec_str(spec, "renewTime"), spec_str(spec, "acquireTime"));
	if (strcmp(seen, l->observed)) {
		snprintf(l->observed, sizeof(l->observed), "%s", seen);
		l->observed_ns = now;
	}
	if (holder[0] && strcmp(holder, l->o.identity) &&
	    now < l->observed_ns + dur * 1000000000ULL)
		goto out; /* someone else holds a valid lease */
	ok = write_lease(l, obj, strcmp(holder, l->o.identity) != 0);
out:
	json_object_put(obj);
	k8s_http__resp_free(&resp);
	return ok;
}

bool k8s_lease__try(struct k8s_lease *l)
{
	uint64_t now = mono_ns();

	if (attempt(l)) {
		if (!l->leader)
			log__msg(LOG_INFO, "controller",
				 "%s is the leader (lease %s/%s)\n",
				 l->o.identity, l->o.ns, l->o.name);
		l->leader = true;
		l->last_renew_ns = now;
	} else if (l->leader && now - l->last_renew_ns >
					l->o.renew_deadline_s * 1000000000ULL) {
		log__msg(
			LOG_WARNING, "controller",
			"%s could not renew the lease for %us: no longer the leader\n",
			l->o.identity, l->o.renew_deadline_s);
		l->leader = false;
	} else if (l->leader && l->observed[0] &&
		   (strncmp(l->observed, l->o.identity,
			    strlen(l->o.identity)) ||
		    l->observed[strlen(l->o.identity)] != '|')) {
		/* somebody else holds it now */
		l->leader = false;
	}
	return l->leader;
}

void k8s_lease__release(struct k8s_lease *l)
{
	char path[700];
	struct k8s_resp resp = {};
	struct k8s_req req = { .method = "GET", .path = path, .timeout_s = 5 };
	struct json_object *obj = NULL, *spec;

	if (!l->leader)
		return;
	snprintf(path, sizeof(path), "%s/%s", l->path, l->o.name);
	if (!k8s_http__do(l->o.http, &req, &resp) && resp.status == 200 &&
	    (obj = json_tokener_parse(resp.body)) &&
	    json_object_object_get_ex(obj, "spec", &spec) &&
	    !strcmp(spec_str(spec, "holderIdentity"), l->o.identity)) {
		struct k8s_req put = { .method = "PUT",
				       .path = path,
				       .timeout_s = 5,
				       .content_type = "application/json" };

		/* client-go ReleaseOnCancel: empty holder, 1 s duration */
		json_object_object_add(spec, "holderIdentity",
				       json_object_new_string(""));
		json_object_object_add(spec, "leaseDurationSeconds",
				       json_object_new_int64(1));
		put.body = json_object_to_json_string_ext(
			obj, JSON_C_TO_STRING_PLAIN);
		put.body_len = strlen(put.body);
		k8s_http__do(l->o.http, &put, &resp);
	}
	l->leader = false;
	json_object_put(obj);
	k8s_http__resp_free(&resp);
}
