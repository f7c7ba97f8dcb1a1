// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer check --kubeconfig FILE | --cluster [--from-cluster]`: the
 * CustomResourceDefinitions installed in the cluster, listed once, for the
 * schemas of custom subject kinds; with --from-cluster also the objects
 * milometer reads, listed by the same watches as the agent's.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "agent/k8s/api_source.h"
#include "agent/cmd/cmd.h"
#include "agent/k8s/config.h"
#include "agent/k8s/http.h"
#include "agent/k8s/json_doc.h"
#include "agent/cmd/check.h"
#include "policy/source/doc.h"
#include "policy/source/manifest_source.h"

#ifndef MM_VERSION
#define MM_VERSION "dev"
#endif

#define CRD_PATH       "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
#define SYNC_MS        20000
#define LIST_TIMEOUT_S 30

struct crd_list {
	struct doc_node **roots;
	size_t n;
	char *label; /* every node's file: "installed in the cluster URL" */
	bool given;  /* the one snapshot went to the source */
};

struct handle {
	struct k8s_api *api;
};

static void crd_list_free(struct crd_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		doc__free(l->roots[i]);
	free(l->roots);
	free(l->label);
	free(l);
}

static void crd_release(void *owner)
{
	(void)owner; /* the list is freed with the source (crd_free) */
}

static int crd_refresh(void *impl, struct msrc_snapshot *snap)
{
	struct crd_list *l = impl;

	if (l->given)
		return 0;
	snap->objs = calloc(l->n ? l->n : 1, sizeof(*snap->objs));
	if (!snap->objs)
		return -ENOMEM;
	for (size_t i = 0; i < l->n; i++) {
		const struct doc_node *r = l->roots[i];

		snap->objs[i] = (struct mobject){
			.root = r,
			.api_version = doc__str(r, "apiVersion"),
			.kind = doc__str(r, "kind"),
			.name = doc__str(r, "metadata.name"),
			.file = r->file,
		};
	}
	snap->nobjs = l->n;
	snap->owner = l;
	snap->release = crd_release;
	l->given = true;
	return 1;
}

static void crd_free(void *impl)
{
	crd_list_free(impl);
}

static const struct msrc_backend crd_backend = {
	.name = "installed CustomResourceDefinitions",
	.refresh = crd_refresh,
	.free = crd_free,
};

/* One page of the CRD list into l; the continue token into cont. */
static int add_items(struct crd_list *l, const char *body, char *cont,
		     size_t contlen, char *err, size_t errlen)
{
	struct json_object *root = json_tokener_parse(body), *items, *meta, *v;
	size_t n;
	int ret = 0;

	cont[0] = '\0';
	if (!root || !json_object_object_get_ex(root, "items", &items) ||
	    !json_object_is_type(items, json_type_array)) {
		snprintf(err, errlen,
			 "the API server's answer to GET %s is not a list",
			 CRD_PATH);
		json_object_put(root);
		return -EPROTO;
	}
	if (json_object_object_get_ex(root, "metadata", &meta) &&
	    json_object_object_get_ex(meta, "continue", &v))
		snprintf(cont, contlen, "%s", json_object_get_string(v));
	n = json_object_array_length(items);
	for (size_t i = 0; i < n && !ret; i++) {
		struct json_object *o = json_object_array_get_idx(items, i);
		struct doc_node **grown;

		/* a typed list's items carry no kind/apiVersion */
		if (!json_object_object_get_ex(o, "kind", NULL))
			json_object_object_add(
				o, "kind",
				json_object_new_string(
					"CustomResourceDefinition"));
		if (!json_object_object_get_ex(o, "apiVersion", NULL))
			json_object_object_add(
				o, "apiVersion",
				json_object_new_string(
					"apiextensions.k8s.io/v1"));
		grown = realloc(l->roots, (l->n + 1) * sizeof(*grown));
		if (!grown) {
			ret = -ENOMEM;
			break;
		}
		l->roots = grown;
		l->roots[l->n] = k8s_json_doc__convert(o, l->label);
		if (!l->roots[l->n])
			ret = -ENOMEM;
		else
			l->n++;
	}
	json_object_put(root);
	if (ret)
		snprintf(err, errlen, "out of memory");
	return ret;
}

static int list_crds(struct k8s_config *cfg, struct crd_list *l, char *err,
		     size_t errlen)
{
	struct k8s_http *h =
		k8s_http__new(cfg, "milometer-check/" MM_VERSION, NULL, NULL);
	char path[2048], cont[1024] = "";
	int ret = 0;

	if (!h) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	do {
		struct k8s_req req = {
			.method = "GET",
			.path = path,
			.timeout_s = LIST_TIMEOUT_S,
		};
		struct k8s_resp resp = { 0 };
		char *esc = cont[0] ? curl_easy_escape(NULL, cont, 0) : NULL;

		snprintf(path, sizeof(path), CRD_PATH "?limit=500%s%s",
			 esc ? "&continue=" : "", esc ? esc : "");
		curl_free(esc);
		ret = k8s_http__do(h, &req, &resp);
		if (ret < 0) {
			snprintf(
				err, errlen,
				"cannot reach the Kubernetes API server %s (the server of %s): %s; start it or fix that server address, or drop --kubeconfig/--cluster to check against the manifests alone",
				cfg->server, cfg->origin,
				resp.error[0] ? resp.error : strerror(-ret));
		} else if (resp.status == 401) {
			snprintf(
				err, errlen,
				"the Kubernetes API server %s refused the credentials of %s (401 Unauthorized): renew the token or client certificate there",
				cfg->server, cfg->origin);
			ret = -EACCES;
		} else if (resp.status == 403) {
			snprintf(
				err, errlen,
				"the Kubernetes API server %s forbids listing customresourcedefinitions.apiextensions.k8s.io (403 Forbidden): grant list on them to the user of %s, or put the CustomResourceDefinitions in the manifests and drop --kubeconfig/--cluster",
				cfg->server, cfg->origin);
			ret = -EACCES;
		} else if (resp.status != 200) {
			snprintf(
				err, errlen,
				"the Kubernetes API server %s answered GET %s with HTTP %ld: is it a Kubernetes API server (the server of %s)?",
				cfg->server, CRD_PATH, resp.status,
				cfg->origin);
			ret = -EPROTO;
		} else {
			ret = add_items(l, resp.body ? resp.body : "", cont,
					sizeof(cont), err, errlen);
		}
		k8s_http__resp_free(&resp);
	} while (!ret && cont[0]);
	k8s_http__free(h);
	return ret;
}

static int api_open(const char *kubeconfig, bool objects,
		    struct manifest_source **crds,
		    struct manifest_source **objs, void **handle, char *server,
		    size_t serverlen, char *err, size_t errlen)
{
	struct k8s_config *cfg = NULL;
	struct crd_list *l = calloc(1, sizeof(*l));
	struct handle *hd = NULL;
	char why[512];
	int ret;

	*crds = NULL;
	if (objs)
		*objs = NULL;
	*handle = NULL;
	if (!l)
		return -ENOMEM;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	ret = k8s_config__load(kubeconfig, &cfg, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "no Kubernetes cluster to read: %s", why);
		goto fail;
	}
	snprintf(server, serverlen, "%s", cfg->server);
	if (asprintf(&l->label, "installed in the cluster %s", cfg->server) <
	    0) {
		l->label = NULL;
		ret = -ENOMEM;
		goto fail;
	}
	ret = list_crds(cfg, l, err, errlen);
	if (ret)
		goto fail;
	*crds = manifest_source__new(&crd_backend, l);
	if (!*crds) {
		ret = -ENOMEM;
		goto fail;
	}
	l = NULL; /* the source owns it */
	if (manifest_source__reload(*crds) < 0) {
		ret = -ENOMEM;
		goto fail;
	}
	hd = calloc(1, sizeof(*hd));
	if (!hd) {
		ret = -ENOMEM;
		goto fail;
	}
	if (objects) {
		struct k8s_api_opts o = {
			.kubeconfig = kubeconfig,
			.user_agent = "milometer-check/" MM_VERSION
		};

		ret = k8s_api__start(&o, &hd->api, err, errlen);
		if (ret)
			goto fail;
		if (!k8s_api__wait_synced(hd->api, SYNC_MS)) {
			k8s_api__synced(hd->api, why, sizeof(why));
			snprintf(err, errlen,
				 "not every resource listed within %d s: %s",
				 SYNC_MS / 1000, why);
			ret = -ETIMEDOUT;
			goto fail;
		}
		*objs = k8s_api__manifest_source(hd->api);
		if (!*objs) {
			ret = -ENOMEM;
			goto fail;
		}
	}
	k8s_config__free(cfg);
	*handle = hd;
	return 0;
fail:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	manifest_source__free(*crds);
	*crds = NULL;
	if (hd) {
		k8s_api__free(hd->api);
		free(hd);
	}
	crd_list_free(l);
	k8s_config__free(cfg);
	return ret;
}

static void api_close(void *handle)
{
	struct handle *hd = handle;

	k8s_api__free(hd->api);
	free(hd);
}

int check_api__main(int argc, char **argv)
{
	static const struct check_api api = { api_open, api_close };

	return check__run_api(argc, argv, stdout, stderr, &api);
}
