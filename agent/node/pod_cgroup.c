// SPDX-License-Identifier: Apache-2.0
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "agent/node/pod_cgroup.h"

/* Walk limits: a node's cgroup tree is a few hundred directories deep. */
#define WALK_MAX_DEPTH 10
#define WALK_MAX_DIRS  20000

/* metadata.uid is an RFC 4122 UUID: 36 chars, hex and dashes. */
#define UID_LEN 36

int pod_cgroup__parse_qos(const char *qos_class, enum pod_qos *out)
{
	if (!qos_class)
		return -EINVAL;
	if (!strcmp(qos_class, "Guaranteed"))
		*out = POD_QOS_GUARANTEED;
	else if (!strcmp(qos_class, "Burstable"))
		*out = POD_QOS_BURSTABLE;
	else if (!strcmp(qos_class, "BestEffort"))
		*out = POD_QOS_BESTEFFORT;
	else
		return -EINVAL;
	return 0;
}

int pod_cgroup__parse_container_id(const char *cid,
				   struct pod_container_id *out)
{
	static const struct {
		const char *scheme;
		enum pod_runtime rt;
	} schemes[] = {
		{ "containerd://", POD_RT_CONTAINERD },
		{ "cri-o://", POD_RT_CRIO },
		{ "docker://", POD_RT_DOCKER },
	};
	const char *id = NULL;
	size_t n;

	if (!cid || !*cid)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t sl = strlen(schemes[i].scheme);

		if (!strncmp(cid, schemes[i].scheme, sl)) {
			id = cid + sl;
			out->runtime = schemes[i].rt;
			break;
		}
	}
	if (!id)
		return strstr(cid, "://") ? -ENOTSUP : -EINVAL;
	n = strlen(id);
	/* ids are hex (64 today); anything else must not reach a path */
	if (n == 0 || n >= sizeof(out->id))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!isxdigit((unsigned char)id[i]))
			return -EINVAL;
		out->id[i] = (char)tolower((unsigned char)id[i]);
	}
	out->id[n] = '\0';
	return 0;
}

static int check_uid(const char *uid)
{
	if (!uid || strlen(uid) != UID_LEN)
		return -EINVAL;
	for (size_t i = 0; i < UID_LEN; i++)
		if (!isxdigit((unsigned char)uid[i]) && uid[i] != '-')
			return -EINVAL;
	return 0;
}

int pod_cgroup__id(const char *dir, uint64_t *cgid)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} h = { .fh.handle_bytes = sizeof(uint64_t) };
	struct statfs sfs;
	struct stat st;
	int mount_id;

	if (statfs(dir, &sfs))
		return -errno;
	if (sfs.f_type == CGROUP2_SUPER_MAGIC) {
		/*
		 * The kernfs file handle is the node id, which is what
		 * bpf_get_current_cgroup_id() returns (kernel selftests
		 * cgroup_helpers.c get_cgroup_id()).
		 */
		if (name_to_handle_at(AT_FDCWD, dir, &h.fh, &mount_id, 0))
			return -errno;
		if (h.fh.handle_bytes != sizeof(uint64_t))
			return -EPROTO;
		memcpy(cgid, h.fh.f_handle, sizeof(*cgid));
		return 0;
	}
	if (stat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*cgid = st.st_ino;
	return 0;
}

int pod_cgroup__host_root(const char *prefix, char *out, size_t len)
{
	static const char *const roots[] = {
		"/host/sys/fs/cgroup",
		"/host/sys/fs/cgroup/unified",
		"/sys/fs/cgroup",
		"/sys/fs/cgroup/unified",
	};
	char probe[PATH_MAX];

	for (size_t i = 0; i < sizeof(roots) / sizeof(roots[0]); i++) {
		int n = snprintf(probe, sizeof(probe),
				 "%s%s/cgroup.controllers", prefix, roots[i]);

		if (n < 0 || (size_t)n >= sizeof(probe) || access(probe, F_OK))
			continue;
		n = snprintf(out, len, "%s%s", prefix, roots[i]);
		return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
	}
	return -ENOENT;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISDIR(st.st_mode);
}

/* The container's leaf names, most likely first for its runtime. */
static size_t leaves(const struct pod_container_id *c,
		     char out[][POD_CONTAINER_ID_MAX + 32])
{
	const size_t sz = POD_CONTAINER_ID_MAX + 32;
	size_t n = 0;

	switch (c->runtime) {
	case POD_RT_CONTAINERD:
		snprintf(out[n++], sz, "cri-containerd-%s.scope", c->id);
		snprintf(out[n++], sz, "%s", c->id);
		break;
	case POD_RT_CRIO:
		/* cgroupfs CRI-O uses crio-<id> without .scope */
		snprintf(out[n++], sz, "crio-%s.scope", c->id);
		snprintf(out[n++], sz, "crio-%s", c->id);
		snprintf(out[n++], sz, "%s", c->id);
		break;
	case POD_RT_DOCKER:
		snprintf(out[n++], sz, "docker-%s.scope", c->id);
		snprintf(out[n++], sz, "%s", c->id);
		break;
	}
	return n;
}

/* The pod directory candidates (relative to root) for both drivers. */
static size_t pod_dirs(const char *uid, enum pod_qos qos, char out[][160])
{
	static const char *const qos_name[] = {
		[POD_QOS_GUARANTEED] = "",
		[POD_QOS_BURSTABLE] = "burstable",
		[POD_QOS_BESTEFFORT] = "besteffort",
	};
	char uid_[UID_LEN + 1];
	size_t n = 0;

	for (size_t i = 0; i <= UID_LEN; i++)
		uid_[i] = uid[i] == '-' ? '_' : uid[i];
	if (qos == POD_QOS_GUARANTEED) {
		snprintf(out[n++], 160, "kubepods.slice/kubepods-pod%s.slice",
			 uid_);
		snprintf(out[n++], 160, "kubepods/pod%s", uid);
	} else {
		snprintf(
			out[n++], 160,
			"kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice",
			qos_name[qos], qos_name[qos], uid_);
		snprintf(out[n++], 160, "kubepods/%s/pod%s", qos_name[qos],
			 uid);
	}
	return n;
}

struct walk {
	const char *id;
	const char *uid;
	const char *uid_;
	char *dir;
	size_t len;
	size_t ndirs;
	int found; /* 0 not yet, 1 found, -ENAMETOOLONG */
};

/*
 * Depth-first walk for a directory named after the container id below one
 * named after the pod uid. CRI-O's conmon cgroup (crio-conmon-<id>) also
 * carries the id and is not the container's.
 */
static void walk(struct walk *w, char *path, size_t plen, int depth,
		 bool in_pod)
{
	DIR *d;
	struct dirent *e;

	if (depth > WALK_MAX_DEPTH || w->found)
		return;
	d = opendir(path);
	if (!d)
		return;
	while (!w->found && (e = readdir(d))) {
		size_t nl = strlen(e->d_name);
		bool pod;

		if (e->d_type != DT_DIR || e->d_name[0] == '.')
			continue;
		if (++w->ndirs > WALK_MAX_DIRS)
			break;
		if (plen + 1 + nl + 1 > PATH_MAX)
			continue;
		path[plen] = '/';
		memcpy(path + plen + 1, e->d_name, nl + 1);
		pod = in_pod || strstr(e->d_name, w->uid) ||
		      strstr(e->d_name, w->uid_);
		if (pod && strstr(e->d_name, w->id) &&
		    !strstr(e->d_name, "conmon")) {
			if (plen + 1 + nl + 1 > w->len) {
				w->found = -ENAMETOOLONG;
			} else {
				memcpy(w->dir, path, plen + 1 + nl + 1);
				w->found = 1;
			}
			break;
		}
		walk(w, path, plen + 1 + nl, depth + 1, pod);
	}
	path[plen] = '\0';
	closedir(d);
}

int pod_cgroup__find(const char *root, const char *pod_uid, enum pod_qos qos,
		     const struct pod_container_id *c, char *dir, size_t len,
		     uint64_t *cgid)
{
	char pods[2][160];
	char leaf[3][POD_CONTAINER_ID_MAX + 32];
	char uid_[UID_LEN + 1];
	size_t npods, nleaves;
	char *path = NULL;
	struct walk w;
	int ret;

	if (check_uid(pod_uid) || !c->id[0])
		return -EINVAL;
	npods = pod_dirs(pod_uid, qos, pods);
	nleaves = leaves(c, leaf);
	for (size_t p = 0; p < npods; p++) {
		for (size_t l = 0; l < nleaves; l++) {
			int n = snprintf(dir, len, "%s/%s/%s", root, pods[p],
					 leaf[l]);

			if (n < 0 || (size_t)n >= len)
				return -ENAMETOOLONG;
			if (is_dir(dir))
				return pod_cgroup__id(dir, cgid);
		}
	}

	/* No known shape: look for it (slow path, once per container). */
	path = malloc(PATH_MAX);
	if (!path)
		return -ENOMEM;
	for (size_t i = 0; i <= UID_LEN; i++)
		uid_[i] = pod_uid[i] == '-' ? '_' : pod_uid[i];
	w = (struct walk){ .id = c->id,
			   .uid = pod_uid,
			   .uid_ = uid_,
			   .dir = dir,
			   .len = len };
	ret = snprintf(path, PATH_MAX, "%s", root);
	if (ret < 0 || ret >= PATH_MAX) {
		ret = -ENAMETOOLONG;
		goto cleanup;
	}
	walk(&w, path, (size_t)ret, 0, false);
	if (w.found < 0) {
		ret = w.found;
		goto cleanup;
	}
	if (!w.found) {
		ret = -ENOENT;
		goto cleanup;
	}
	ret = pod_cgroup__id(dir, cgid);
cleanup:
	free(path);
	return ret;
}
