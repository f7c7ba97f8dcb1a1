// SPDX-License-Identifier: Apache-2.0
/*
 * `milometer translate --kubeconfig FILE`: list the contract and subject
 * objects once (the same watches as the controller), then translate them
 * as --manifests would.
 */
#include <stdio.h>
#include <stdlib.h>

#include "agent/cmd/cmd.h"
#include "agent/k8s/api_source.h"
#include "policy/source/manifest_source.h"
#include "policy/translate/translate.h"

#define SYNC_MS 20000

struct handle {
	struct k8s_api *api;
	struct manifest_source *src;
};

static struct manifest_source *api_open(const char *kubeconfig, void **out,
					char *err, size_t errlen)
{
	struct k8s_api_opts o = { .kubeconfig = kubeconfig };
	struct handle *h = calloc(1, sizeof(*h));

	if (!h || k8s_api__start(&o, &h->api, err, errlen)) {
		free(h);
		return NULL;
	}
	if (!k8s_api__wait_synced(h->api, SYNC_MS))
		fprintf(stderr,
			"milometer translate: not every resource listed within %d s; translating what arrived\n",
			SYNC_MS / 1000);
	h->src = k8s_api__manifest_source(h->api);
	if (!h->src) {
		k8s_api__free(h->api);
		free(h);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	*out = h;
	return h->src;
}

static void api_close(void *p)
{
	struct handle *h = p;

	manifest_source__free(h->src);
	k8s_api__free(h->api);
	free(h);
}

int translate_api__main(int argc, char **argv)
{
	static const struct translate_api api = { api_open, api_close };

	return translate__main(argc, argv, &api);
}
