// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "agent/k8s/api_source.h"
#include "agent/node/pod_cgroup.h"
#include "agent/k8s/store.h"
#include "agent/proxy_pods.h"
#include "agent/route_sync.h"
#include "agent/targets.h"
#include "policy/gateway/route_compile.h"

/*
 * Pod labels that name the Gateway a proxy pod serves, and the label of its
 * namespace (NULL: the pod's own, as implementations that deploy the proxy
 * beside its Gateway do).
 */
static const struct {
	const char *name, *ns;
} gateway_labels[] = {
	{ "gateway.networking.k8s.io/gateway-name", NULL },
	{ "gateway.envoyproxy.io/owning-gateway-name",
	  "gateway.envoyproxy.io/owning-gateway-namespace" },
};

/*
 * Container cgroups made targets, to take them out again when their pod or
 * container is gone (restarts and rollouts would fill mm_target_cgroups).
 */
struct tracked {
	uint64_t id;
	bool seen; /* found again by the walk in progress */
};

static struct tracked *tracked;
static size_t ntracked, ctracked;

static int track(uint64_t id)
{
	for (size_t i = 0; i < ntracked; i++)
		if (tracked[i].id == id) {
			tracked[i].seen = true;
			return 0;
		}
	if (ntracked == ctracked) {
		size_t cap = ctracked ? ctracked * 2 : 16;
		struct tracked *n = realloc(tracked, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		tracked = n;
		ctracked = cap;
	}
	tracked[ntracked++] = (struct tracked){ .id = id, .seen = true };
	return 0;
}

/* After a full walk: what it did not find again is gone. */
static uint64_t untrack_unseen(struct milometer_bpf *skel)
{
	uint64_t removed = 0;
	size_t j = 0;

	for (size_t i = 0; i < ntracked; i++) {
		if (!tracked[i].seen &&
		    !targets__remove_cgroup(skel, tracked[i].id)) {
			removed++;
			continue;
		}
		tracked[i].seen = false;
		tracked[j++] = tracked[i];
	}
	ntracked = j;
	return removed;
}

struct walk {
	struct milometer_bpf *skel;
	struct route_sync *rs;
	const char *root;
	struct proxy_pods_stats st;
};

static const char *str_at(struct json_object *o, const char *a, const char *b)
{
	struct json_object *v;

	if (!json_object_object_get_ex(o, a, &v))
		return NULL;
	if (b && !json_object_object_get_ex(v, b, &v))
		return NULL;
	return json_object_is_type(v, json_type_string)
		       ? json_object_get_string(v)
		       : NULL;
}

/* The Gateway a pod runs, from its labels: false when it runs none. */
static bool gateway_of(struct json_object *pod, const char **ns,
		       const char **name)
{
	struct json_object *md, *labels;

	if (!json_object_object_get_ex(pod, "metadata", &md) ||
	    !json_object_object_get_ex(md, "labels", &labels))
		return false;
	for (size_t i = 0;
	     i < sizeof(gateway_labels) / sizeof(gateway_labels[0]); i++) {
		*name = str_at(labels, gateway_labels[i].name, NULL);
		*ns = gateway_labels[i].ns
			      ? str_at(labels, gateway_labels[i].ns, NULL)
			      : str_at(md, "namespace", NULL);
		if (*name && *name[0] && *ns && *ns[0])
			return true;
	}
	return false;
}

static int visit(struct json_object *pod, void *ctx)
{
	struct walk *w = ctx;
	struct json_object *status, *cs;
	const char *uid = str_at(pod, "metadata", "uid");
	const char *qos = str_at(pod, "status", "qosClass");
	const char *gw_ns, *gw_name;
	enum pod_qos q;
	int slot;

	if (!gateway_of(pod, &gw_ns, &gw_name) || !uid || !qos ||
	    pod_cgroup__parse_qos(qos, &q))
		return 0;
	w->st.pods++;
	slot = route_sync__gateway_slot(w->rs, gw_ns, gw_name);
	if (slot < 0) {
		/* past MM_GW_SLOTS Gateways on one node: the default table */
		w->st.no_slot++;
		slot = 0;
	}
	if (!json_object_object_get_ex(pod, "status", &status) ||
	    !json_object_object_get_ex(status, "containerStatuses", &cs) ||
	    !json_object_is_type(cs, json_type_array))
		return 0;
	for (size_t i = 0; i < json_object_array_length(cs); i++) {
		struct json_object *c = json_object_array_get_idx(cs, i), *v;
		const struct route_table *t = route_sync__current(w->rs);
		struct pod_container_id cid;
		char dir[PATH_MAX];
		uint64_t id;

		/*
		 * Its Gateway's routes go in first (the route table's next
		 * poll), else its requests would be unmatched until then.
		 */
		if (!t || (size_t)slot >= t->nslots) {
			w->st.missing++;
			continue;
		}
		if (!json_object_object_get_ex(c, "containerID", &v) ||
		    pod_cgroup__parse_container_id(json_object_get_string(v),
						   &cid))
			continue; /* not started yet */
		if (pod_cgroup__find(w->root, uid, q, &cid, dir, sizeof(dir),
				     &id) ||
		    targets__add_cgroup(w->skel, dir, id, (uint32_t)slot) < 0 ||
		    track(id)) {
			w->st.missing++;
			continue;
		}
		w->st.containers++;
	}
	return 0;
}

int proxy_pods__sync(struct k8s_api *a, struct milometer_bpf *skel,
		     struct route_sync *rs, struct proxy_pods_stats *st)
{
	static uint64_t seen_gen = UINT64_MAX;
	static char root[PATH_MAX];
	struct k8s_store *pods = k8s_api__store(a, "pods");
	struct walk w = { .skel = skel, .rs = rs, .root = root };
	uint64_t gen;

	if (!pods)
		return -ENOENT;
	gen = k8s_store__generation(pods);
	/* a container whose cgroup is not there yet is retried every call */
	if (gen == seen_gen && !st->missing)
		return 0;
	if (!root[0] && pod_cgroup__host_root("", root, sizeof(root))) {
		root[0] = 0;
		return -ENOENT;
	}
	k8s_store__foreach(pods, visit, &w);
	w.st.removed = st->removed + untrack_unseen(skel);
	seen_gen = gen;
	*st = w.st;
	return 0;
}
