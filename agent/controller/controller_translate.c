// SPDX-License-Identifier: Apache-2.0
/* `milometer controller --translate`: see controller_translate.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/controller/controller_translate.h"
#include "agent/k8s/http.h"
#include "bpf/fnv1a.h"
#include "policy/contract/conditions.h"
#include "policy/contract/contract.h"
#include "policy/translate/translate.h"
#define LOG_MODULE "controller"
#include "policy/util/log.h"

#define HASH_ANNOTATION "telemetry.miloapis.com/translation-hash"
#define FIELD_MANAGER   "milometer"

int ctrl_translate__add(struct ctrl_translate *ct, const char *arg, char *err,
			size_t errlen)
{
	struct ctrl_target *t;
	const char *eq = strchr(arg, '='), *slash;

	if (ct->n >= CTRL_TRANSLATE_MAX) {
		snprintf(err, errlen, "--translate: at most %d targets",
			 CTRL_TRANSLATE_MAX);
		return -EINVAL;
	}
	t = &ct->t[ct->n];
	slash = eq ? strchr(eq, '/') : NULL;
	if (!eq || !slash || eq - arg >= (long)sizeof(t->target) ||
	    slash - eq - 1 <= 0 || slash - eq - 1 >= (long)sizeof(t->ns) ||
	    !slash[1] || strlen(slash + 1) >= sizeof(t->name)) {
		snprintf(
			err, errlen,
			"--translate %s: write TARGET=NAMESPACE/NAME, e.g. prometheusrule=monitoring/milometer",
			arg);
		return -EINVAL;
	}
	memset(t, 0, sizeof(*t));
	snprintf(t->target, sizeof(t->target), "%.*s", (int)(eq - arg), arg);
	snprintf(t->ns, sizeof(t->ns), "%.*s", (int)(slash - eq - 1), eq + 1);
	snprintf(t->name, sizeof(t->name), "%s", slash + 1);
	if (!translate__known_target(t->target)) {
		snprintf(
			err, errlen,
			"--translate %s: target %s: use prometheus-rules, prometheusrule, otelcol or kube-state-metrics",
			arg, t->target);
		return -EINVAL;
	}
	ct->n++;
	return 0;
}

/* Per policy: every target's verdict, joined into one condition. */
struct verdicts {
	struct verdict {
		char *policy;
		bool ok;
		char msg[COND_MSG_MAX];
	} * v;
	size_t n;
	const struct ctrl_target *cur;
};

static void on_report(void *ctx, const char *policy, bool ok, const char *msg)
{
	struct verdicts *vs = ctx;
	struct verdict *v = NULL;
	size_t used;

	for (size_t i = 0; i < vs->n && !v; i++)
		if (!strcmp(vs->v[i].policy, policy))
			v = &vs->v[i];
	if (!v) {
		struct verdict *nv = realloc(vs->v, (vs->n + 1) * sizeof(*nv));

		if (!nv)
			return;
		vs->v = nv;
		v = &vs->v[vs->n];
		memset(v, 0, sizeof(*v));
		v->policy = strdup(policy);
		if (!v->policy)
			return;
		v->ok = true;
		vs->n++;
	}
	v->ok &= ok;
	used = strlen(v->msg);
	snprintf(v->msg + used, sizeof(v->msg) - used, "%s%s=%s/%s: %s%s",
		 used ? "; " : "", vs->cur->target, vs->cur->ns, vs->cur->name,
		 ok ? "" : "NotTranslatable: ", msg);
}

void ctrl_translate__render(struct ctrl_translate *ct, struct contract *c,
			    struct policy_engine *e)
{
	struct verdicts vs = { 0 };

	for (size_t i = 0; i < ct->n; i++) {
		struct ctrl_target *t = &ct->t[i];
		char *buf = NULL;
		size_t len = 0;
		uint64_t h;

		vs.cur = t;
		if (translate__target(c, e, t->target, t->name, t->ns, &buf,
				      &len, on_report, &vs)) {
			pr_err("translating to %s failed (out of memory)\n",
			       t->target);
			continue;
		}
		h = fnv1a64(FNV1A64_OFFSET, buf, len);
		if (t->content && h == t->hash) {
			free(buf);
			continue;
		}
		free(t->content);
		t->content = buf;
		t->hash = h;
		t->applied = false;
	}
	for (size_t i = 0; i < vs.n; i++) {
		contract__set_policy_condition(
			c, vs.v[i].policy, COND_TRANSLATED, vs.v[i].ok,
			vs.v[i].ok ? "Translated" : "NotTranslatable", "%s",
			vs.v[i].msg);
		free(vs.v[i].policy);
	}
	free(vs.v);
}

static void object_path(const struct ctrl_target *t, char *buf, size_t len,
			bool apply)
{
	bool pr = !strcmp(t->target, "prometheusrule");

	snprintf(buf, len, "%s/namespaces/%s/%s/%s%s",
		 pr ? "/apis/monitoring.coreos.com/v1" : "/api/v1", t->ns,
		 pr ? "prometheusrules" : "configmaps", t->name,
		 apply ? "?fieldManager=" FIELD_MANAGER "&force=true" : "");
}

/* The hash the object in the cluster carries, 0 when none or absent. */
static uint64_t cluster_hash(struct k8s_http *http, const struct ctrl_target *t)
{
	struct k8s_req req = { .method = "GET", .timeout_s = 10 };
	struct k8s_resp resp = { 0 };
	struct json_object *o = NULL, *m, *a, *h;
	uint64_t v = 0;
	char path[1024];

	object_path(t, path, sizeof(path), false);
	req.path = path;
	if (!k8s_http__do(http, &req, &resp) && resp.status == 200 &&
	    (o = json_tokener_parse(resp.body)) &&
	    json_object_object_get_ex(o, "metadata", &m) &&
	    json_object_object_get_ex(m, "annotations", &a) &&
	    json_object_object_get_ex(a, HASH_ANNOTATION, &h))
		v = strtoull(json_object_get_string(h), NULL, 16);
	json_object_put(o);
	k8s_http__resp_free(&resp);
	return v;
}

static const char *data_key(const char *target)
{
	if (!strcmp(target, "otelcol"))
		return "otelcol.yaml";
	if (!strcmp(target, "kube-state-metrics"))
		return "custom-resource-state.yaml";
	return "milometer.rules.yml";
}

static char *apply_body(const struct ctrl_target *t)
{
	struct json_object *body = json_object_new_object();
	struct json_object *meta = json_object_new_object();
	struct json_object *ann = json_object_new_object();
	struct json_object *lab = json_object_new_object();
	struct json_object *data = json_object_new_object();
	char hash[24];
	char *out;

	snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)t->hash);
	if (!strcmp(t->target, "prometheusrule")) {
		/* the rendered object, with the hash added to its metadata */
		const char *m = strstr(t->content, "\nmetadata:\n");
		size_t head;

		json_object_put(body);
		json_object_put(meta);
		json_object_put(ann);
		json_object_put(lab);
		json_object_put(data);
		if (!m)
			return NULL;
		head = (size_t)(m - t->content) + strlen("\nmetadata:\n");
		if (asprintf(&out, "%.*s  annotations:\n    %s: \"%s\"\n%s",
			     (int)head, t->content, HASH_ANNOTATION, hash,
			     t->content + head) < 0)
			return NULL;
		return out;
	}
	json_object_object_add(body, "apiVersion",
			       json_object_new_string("v1"));
	json_object_object_add(body, "kind",
			       json_object_new_string("ConfigMap"));
	json_object_object_add(meta, "name", json_object_new_string(t->name));
	json_object_object_add(meta, "namespace",
			       json_object_new_string(t->ns));
	json_object_object_add(lab, "app.kubernetes.io/managed-by",
			       json_object_new_string("milometer"));
	json_object_object_add(meta, "labels", lab);
	json_object_object_add(ann, HASH_ANNOTATION,
			       json_object_new_string(hash));
	json_object_object_add(meta, "annotations", ann);
	json_object_object_add(body, "metadata", meta);
	json_object_object_add(data, data_key(t->target),
			       json_object_new_string(t->content));
	json_object_object_add(body, "data", data);
	out = strdup(
		json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
	json_object_put(body);
	return out;
}

void ctrl_translate__apply(struct ctrl_translate *ct, struct k8s_http *http)
{
	for (size_t i = 0; i < ct->n; i++) {
		struct ctrl_target *t = &ct->t[i];
		struct k8s_req req = { .method = "PATCH",
				       .timeout_s = 10,
				       .content_type =
					       "application/apply-patch+yaml" };
		struct k8s_resp resp = { 0 };
		char path[1024];
		char *body;
		int ret;

		if (!t->content || t->applied)
			continue;
		if (cluster_hash(http, t) == t->hash) {
			t->applied = true; /* a previous leader wrote it */
			continue;
		}
		body = apply_body(t);
		if (!body)
			continue;
		object_path(t, path, sizeof(path), true);
		req.path = path;
		req.body = body;
		req.body_len = strlen(body);
		ret = k8s_http__do(http, &req, &resp);
		if (!ret && (resp.status == 200 || resp.status == 201)) {
			t->applied = true;
			ct->writes++;
			pr_info("%s %s/%s written (%s)\n", t->target, t->ns,
				t->name, path);
		} else {
			ct->write_errors++;
			pr_err("writing %s %s/%s failed: %s%ld %.300s\n",
			       t->target, t->ns, t->name,
			       ret ? resp.error : "HTTP ",
			       ret ? 0L : resp.status,
			       resp.body ? resp.body : "");
		}
		k8s_http__resp_free(&resp);
		free(body);
	}
}

void ctrl_translate__forget(struct ctrl_translate *ct)
{
	for (size_t i = 0; i < ct->n; i++)
		ct->t[i].applied = false;
}

void ctrl_translate__free(struct ctrl_translate *ct)
{
	for (size_t i = 0; i < ct->n; i++) {
		free(ct->t[i].content);
		ct->t[i].content = NULL;
	}
}
