// SPDX-License-Identifier: Apache-2.0
/*
 * k8s_watch: run milometer's Kubernetes client outside the agent, for the
 * selftests/k8s tests (no root, no BPF).
 *
 *   k8s_watch [--kubeconfig K] --resource GROUP/VERSION/PLURAL
 *             [--field-selector S] [--stats FILE]
 *       one reflector; prints each store change as
 *       "ADDED|UPDATED|DELETED ns/name rv" and keeps FILE updated with
 *       its counters (JSON) every 100 ms
 *   k8s_watch [--kubeconfig K] --api [--node-name N] [--stats FILE]
 *       the agent's full set of watches (k8s_api), rebuilding the manifest
 *       snapshot on each change like the agent; prints "SNAPSHOT n" lines
 * Runs until SIGTERM/SIGINT. GROUP is "core" for the core group.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "agent/k8s/api_source.h"
#include "agent/k8s/config.h"
#include "agent/k8s/http.h"
#include "agent/k8s/reflector.h"
#include "agent/k8s/store.h"
#include "policy/source/manifest_source.h"

static volatile sig_atomic_t done;

static void on_sig(int s)
{
	done = 1;
}

static void on_change(enum k8s_change w, struct json_object *o,
		      struct json_object *old, void *ctx)
{
	static const char *const n[] = { "ADDED", "UPDATED", "DELETED" };
	struct json_object *m = NULL, *rv = NULL;
	char key[512];

	k8s_store__key(o, key, sizeof(key));
	json_object_object_get_ex(o, "metadata", &m);
	json_object_object_get_ex(m, "resourceVersion", &rv);
	printf("%s %s %s\n", n[w], key, rv ? json_object_get_string(rv) : "");
	fflush(stdout);
}

static void write_stats(const char *path, struct k8s_reflector_stats *st,
			struct k8s_http_stats *hs)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f,
		"{\"state\":\"%s\",\"synced\":%d,\"lists\":%llu,\"relists\":%llu,\"watches\":%llu,\"events\":%llu,\"bookmarks\":%llu,\"objects\":%llu,\"requests\":%llu,\"bytes\":%llu,\"token_rereads_401\":%llu,\"backoff_ms\":%llu,\"errors\":{",
		k8s_watch_state__name(st->state), (int)st->synced,
		(unsigned long long)st->lists, (unsigned long long)st->relists,
		(unsigned long long)st->watches, (unsigned long long)st->events,
		(unsigned long long)st->bookmarks,
		(unsigned long long)st->objects,
		(unsigned long long)hs->requests,
		(unsigned long long)hs->bytes_in,
		(unsigned long long)hs->token_rereads_401,
		(unsigned long long)st->backoff_ms);
	for (int e = 0; e < K8S_E__N; e++)
		fprintf(f, "%s\"%s\":%llu", e ? "," : "", k8s_err__name(e),
			(unsigned long long)st->errors[e]);
	fprintf(f, "}}\n");
	fclose(f);
	rename(tmp, path);
}

static int run_api(const char *kubeconfig, const char *node, const char *stats)
{
	struct k8s_api_opts o = { .kubeconfig = kubeconfig,
				  .node_name = node,
				  .user_agent = "milometer-k8s-watch" };
	struct manifest_source *src = NULL;
	struct k8s_api *a = NULL;
	char err[1024];
	int ret;

	ret = k8s_api__start(&o, &a, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "k8s_watch: %s\n", err);
		return 1;
	}
	k8s_api__wait_synced(a, 60000);
	src = k8s_api__manifest_source(a);
	if (!src) {
		k8s_api__free(a);
		return 1;
	}
	printf("SNAPSHOT %zu\n", manifest_source__count(src));
	fflush(stdout);
	while (!done) {
		if (manifest_source__reload(src) > 0) {
			printf("SNAPSHOT %zu\n", manifest_source__count(src));
			fflush(stdout);
		}
		if (stats) {
			char tmp[4096];
			FILE *f;

			snprintf(tmp, sizeof(tmp), "%s.tmp", stats);
			f = fopen(tmp, "w");
			if (f) {
				k8s_api__dump(a, f, 1);
				fclose(f);
				rename(tmp, stats);
			}
		}
		usleep(100000);
	}
	manifest_source__free(src);
	k8s_api__free(a);
	return 0;
}

int main(int argc, char **argv)
{
	const char *kubeconfig = NULL, *resource = NULL, *field = NULL;
	const char *stats = NULL, *node = NULL;
	struct k8s_http_stats hs = {};
	struct k8s_resource res = {};
	struct k8s_config *cfg = NULL;
	struct k8s_store *store = NULL;
	struct k8s_reflector *r = NULL;
	bool api = false;
	char err[1024], g[256], v[64], p[256];

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--api")) {
			api = true;
			continue;
		}
		if (!val) {
			fprintf(stderr, "k8s_watch: %s needs a value\n", a);
			return 2;
		}
		i++;
		if (!strcmp(a, "--kubeconfig"))
			kubeconfig = val;
		else if (!strcmp(a, "--resource"))
			resource = val;
		else if (!strcmp(a, "--field-selector"))
			field = val;
		else if (!strcmp(a, "--stats"))
			stats = val;
		else if (!strcmp(a, "--node-name"))
			node = val;
		else {
			fprintf(stderr, "k8s_watch: unknown option %s\n", a);
			return 2;
		}
	}
	signal(SIGTERM, on_sig);
	signal(SIGINT, on_sig);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (api)
		return run_api(kubeconfig, node, stats);
	if (!resource ||
	    sscanf(resource, "%255[^/]/%63[^/]/%255s", g, v, p) != 3) {
		fprintf(stderr,
			"k8s_watch: --resource GROUP/VERSION/PLURAL (GROUP core for \"\")\n");
		return 2;
	}
	res = (struct k8s_resource){ .group = strcmp(g, "core") ? g : "",
				     .version = v,
				     .plural = p,
				     .kind = "Object",
				     .field_selector = field };
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if (k8s_config__load(kubeconfig, &cfg, err, sizeof(err))) {
		fprintf(stderr, "k8s_watch: %s\n", err);
		return 1;
	}
	store = k8s_store__new(on_change, NULL);
	{
		struct k8s_reflector_opts ro = {
			.res = &res,
			.cfg = cfg,
			.store = store,
			.user_agent = "milometer-k8s-watch",
			.http_stats = &hs,
			.min_watch_s =
				getenv("MILOMETER_K8S_WATCH_TIMEOUT")
					? strtoul(getenv("MILOMETER_K8S_WATCH_TIMEOUT"),
						  NULL, 10)
					: 0,
			.page_size = getenv("K8S_WATCH_PAGE")
					     ? strtoul(getenv("K8S_WATCH_PAGE"),
						       NULL, 10)
					     : 0,
		};

		r = k8s_reflector__start(&ro);
	}
	if (!r)
		return 1;
	while (!done) {
		if (stats)
			write_stats(stats, k8s_reflector__stats(r), &hs);
		usleep(100000);
	}
	if (stats)
		write_stats(stats, k8s_reflector__stats(r), &hs);
	k8s_reflector__free(r);
	k8s_store__free(store);
	k8s_config__free(cfg);
	return 0;
}
