// SPDX-License-Identifier: Apache-2.0
/*
 * Pod -> cgroup directory on fixture trees made in a temp dir, one per path
 * shape of k8s_integration.md §4.2 (systemd and cgroupfs drivers, the three
 * QoS classes, containerd, CRI-O and Docker leaves), plus the decoys that
 * must not match: another pod's container, CRI-O's conmon cgroup, the other
 * QoS class. The id of a fixture directory is its inode (stat from outside
 * the code under test). The real-cgroup check against what BPF sees is the
 * integration test test_pod_cgroup.sh.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "agent/node/pod_cgroup.h"
#include "selftests/unit/test.h"

#define UID       "3f1c2a9e-8b7d-4c6e-9a5f-0123456789ab"
#define UID_      "3f1c2a9e_8b7d_4c6e_9a5f_0123456789ab"
#define OTHER_UID "aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee"
#define CID       "4b825dc642cb6eb9a060e54bf8d69288fbee4904d5a0b7c8e1f2a3b4c5d6e7f8"
#define CID2      "0000000000000000000000000000000000000000000000000000000000000001"

/* mkdir -p root/rel; returns the directory's inode or 0 */
static unsigned long long mkpath(const char *root, const char *rel)
{
	char path[1024];
	struct stat st;
	char *p;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (p = path + strlen(root) + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
	if (stat(path, &st))
		return 0;
	return st.st_ino;
}

static const char *fresh_root(const char *name)
{
	static char root[512];

	snprintf(root, sizeof(root), "%s/%s", test__tmpdir(), name);
	mkdir(root, 0755);
	return root;
}

struct shape {
	const char *name;
	const char *qos;
	const char *cid_scheme;
	const char *rel; /* the container's directory */
};

static const struct shape shapes[] = {
	{ "systemd_containerd_burstable", "Burstable", "containerd://",
	  "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" CID ".scope" },
	{ "systemd_containerd_besteffort", "BestEffort", "containerd://",
	  "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/cri-containerd-" CID ".scope" },
	{ "systemd_containerd_guaranteed", "Guaranteed", "containerd://",
	  "kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" CID
	  ".scope" },
	{ "systemd_crio_burstable", "Burstable", "cri-o://",
	  "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
	  ".slice/crio-" CID ".scope" },
	{ "systemd_crio_guaranteed", "Guaranteed", "cri-o://",
	  "kubepods.slice/kubepods-pod" UID_ ".slice/crio-" CID ".scope" },
	{ "systemd_docker_besteffort", "BestEffort", "docker://",
	  "kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
	  ".slice/docker-" CID ".scope" },
	{ "cgroupfs_containerd_burstable", "Burstable", "containerd://",
	  "kubepods/burstable/pod" UID "/" CID },
	{ "cgroupfs_containerd_besteffort", "BestEffort", "containerd://",
	  "kubepods/besteffort/pod" UID "/" CID },
	{ "cgroupfs_containerd_guaranteed", "Guaranteed", "containerd://",
	  "kubepods/pod" UID "/" CID },
	{ "cgroupfs_crio_burstable", "Burstable", "cri-o://",
	  "kubepods/burstable/pod" UID "/crio-" CID },
	{ "cgroupfs_docker_guaranteed", "Guaranteed", "docker://",
	  "kubepods/pod" UID "/" CID },
	/* found by the walk: kind's nesting, a non-default --cgroup-root */
	{ "walk_kind_nested", "Burstable", "containerd://",
	  "docker/a1b2c3/kubelet.slice/kubelet-kubepods.slice/"
	  "kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" UID_
	  ".slice/cri-containerd-" CID ".scope" },
	{ "walk_cgroup_root", "Guaranteed", "containerd://",
	  "k8s.slice/kubepods/pod" UID "/" CID },
};

static void decoys(const char *root)
{
	/* another pod with the same container id layout, and a sibling */
	mkpath(root,
	       "kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
	       "aaaaaaaa_bbbb_cccc_dddd_eeeeeeeeeeee.slice/cri-containerd-" CID2
	       ".scope");
	mkpath(root, "kubepods/burstable/pod" OTHER_UID "/" CID2);
	/* a container of another pod that happens to carry our id: never */
	mkpath(root, "system.slice/containerd.service");
}

TEST(pod_cgroup_shapes)
{
	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
		const struct shape *s = &shapes[i];
		const char *root = fresh_root(s->name);
		struct pod_container_id c;
		enum pod_qos qos;
		char cid[256], dir[1024], want[1024];
		unsigned long long ino;
		uint64_t id = 0;
		int r;

		decoys(root);
		ino = mkpath(root, s->rel);
		ASSERT_TRUE(ino != 0, "mkpath %s", s->rel);
		/* pod-level siblings: the pause sandbox of this pod */
		snprintf(cid, sizeof(cid), "%s%s", s->cid_scheme, CID);
		ASSERT_EQ(pod_cgroup__parse_container_id(cid, &c), 0);
		ASSERT_EQ(pod_cgroup__parse_qos(s->qos, &qos), 0);
		r = pod_cgroup__find(root, UID, qos, &c, dir, sizeof(dir), &id);
		if (r) {
			test__fail(__FILE__, __LINE__, "%s: find: %d", s->name,
				   r);
			return;
		}
		snprintf(want, sizeof(want), "%s/%s", root, s->rel);
		if (strcmp(dir, want)) {
			test__fail(__FILE__, __LINE__, "%s: dir %s, want %s",
				   s->name, dir, want);
			return;
		}
		ASSERT_EQ(id, ino);
	}
}

TEST(pod_cgroup_crio_conmon_is_not_the_container)
{
	const char *root = fresh_root("crio_walk");
	struct pod_container_id c;
	char dir[1024];
	uint64_t id;
	unsigned long long ino;

	/* a non-default root so the walk runs; conmon first in readdir or not */
	mkpath(root,
	       "custom/kubepods-pod" UID_ ".slice/crio-conmon-" CID ".scope");
	ino = mkpath(root,
		     "custom/kubepods-pod" UID_ ".slice/crio-" CID ".scope");
	ASSERT_EQ(pod_cgroup__parse_container_id("cri-o://" CID, &c), 0);
	ASSERT_EQ(pod_cgroup__find(root, UID, POD_QOS_GUARANTEED, &c, dir,
				   sizeof(dir), &id),
		  0);
	ASSERT_TRUE(strstr(dir, "crio-conmon-") == NULL, "got %s", dir);
	ASSERT_EQ(id, ino);
	/* conmon alone (the container not started yet): nothing */
	root = fresh_root("crio_walk_conmon_only");
	mkpath(root,
	       "custom/kubepods-pod" UID_ ".slice/crio-conmon-" CID ".scope");
	ASSERT_EQ(pod_cgroup__find(root, UID, POD_QOS_GUARANTEED, &c, dir,
				   sizeof(dir), &id),
		  -ENOENT);
}

TEST(pod_cgroup_wrong_pod_or_gone)
{
	const char *root = fresh_root("gone");
	struct pod_container_id c;
	char dir[1024];
	uint64_t id;

	decoys(root);
	/* our container id, but under another pod: not ours */
	mkpath(root, "kubepods/burstable/pod" OTHER_UID "/" CID);
	ASSERT_EQ(pod_cgroup__parse_container_id("containerd://" CID, &c), 0);
	ASSERT_EQ(pod_cgroup__find(root, UID, POD_QOS_BURSTABLE, &c, dir,
				   sizeof(dir), &id),
		  -ENOENT);
	/* right pod, other QoS class: found by the walk (the class changed
	 * only if the pod was recreated; the uid is what binds) */
	mkpath(root, "kubepods/besteffort/pod" UID "/" CID);
	ASSERT_EQ(pod_cgroup__find(root, UID, POD_QOS_BURSTABLE, &c, dir,
				   sizeof(dir), &id),
		  0);
	ASSERT_TRUE(strstr(dir, "besteffort/pod" UID "/" CID) != NULL, "got %s",
		    dir);
	/* a directory too small is an error, not a truncated path */
	ASSERT_EQ(pod_cgroup__find(root, UID, POD_QOS_BESTEFFORT, &c, dir, 16,
				   &id),
		  -ENAMETOOLONG);
}

TEST(pod_cgroup_parse)
{
	struct pod_container_id c;
	enum pod_qos q;

	ASSERT_EQ(pod_cgroup__parse_container_id("containerd://ABCdef01", &c),
		  0);
	ASSERT_EQ(c.runtime, POD_RT_CONTAINERD);
	ASSERT_STREQ(c.id, "abcdef01");
	ASSERT_EQ(pod_cgroup__parse_container_id("cri-o://" CID, &c), 0);
	ASSERT_EQ(c.runtime, POD_RT_CRIO);
	ASSERT_EQ(pod_cgroup__parse_container_id("docker://" CID, &c), 0);
	ASSERT_EQ(c.runtime, POD_RT_DOCKER);
	/* not started yet, foreign runtimes, ids that would escape a path */
	ASSERT_EQ(pod_cgroup__parse_container_id("", &c), -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_container_id(NULL, &c), -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_container_id("containerd://", &c), -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_container_id("rkt://abc", &c), -ENOTSUP);
	ASSERT_EQ(pod_cgroup__parse_container_id("containerd://../../etc", &c),
		  -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_container_id("containerd://ab/cd", &c),
		  -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_container_id(CID, &c), -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_qos("Guaranteed", &q), 0);
	ASSERT_EQ(q, POD_QOS_GUARANTEED);
	ASSERT_EQ(pod_cgroup__parse_qos("Burstable", &q), 0);
	ASSERT_EQ(q, POD_QOS_BURSTABLE);
	ASSERT_EQ(pod_cgroup__parse_qos("BestEffort", &q), 0);
	ASSERT_EQ(q, POD_QOS_BESTEFFORT);
	ASSERT_EQ(pod_cgroup__parse_qos("besteffort", &q), -EINVAL);
	ASSERT_EQ(pod_cgroup__parse_qos(NULL, &q), -EINVAL);
}

TEST(pod_cgroup_bad_uid)
{
	struct pod_container_id c;
	char dir[256];
	uint64_t id;

	ASSERT_EQ(pod_cgroup__parse_container_id("containerd://" CID, &c), 0);
	ASSERT_EQ(pod_cgroup__find("/nonexistent",
				   "../../../../etc/passwd-xxxxxxxxxxxxxxxx",
				   POD_QOS_BURSTABLE, &c, dir, sizeof(dir),
				   &id),
		  -EINVAL);
	ASSERT_EQ(pod_cgroup__find("/nonexistent", "short", POD_QOS_BURSTABLE,
				   &c, dir, sizeof(dir), &id),
		  -EINVAL);
	ASSERT_EQ(pod_cgroup__find("/nonexistent", UID, POD_QOS_BURSTABLE, &c,
				   dir, sizeof(dir), &id),
		  -ENOENT);
}

TEST(pod_cgroup_host_root)
{
	char base[512], out[1024], want[1024];
	FILE *f;

	/* hybrid host: v1 at /sys/fs/cgroup, v2 at .../unified */
	snprintf(base, sizeof(base), "%s/hostroot", test__tmpdir());
	mkdir(base, 0755);
	mkpath(base, "sys/fs/cgroup/memory");
	mkpath(base, "sys/fs/cgroup/unified");
	snprintf(want, sizeof(want),
		 "%s/sys/fs/cgroup/unified/cgroup.controllers", base);
	f = fopen(want, "w");
	ASSERT_TRUE(f != NULL);
	fclose(f);
	ASSERT_EQ(pod_cgroup__host_root(base, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/sys/fs/cgroup/unified", base);
	ASSERT_STREQ(out, want);
	/* in the DaemonSet the host tree at /host wins over the pod's own */
	mkpath(base, "host/sys/fs/cgroup");
	snprintf(want, sizeof(want), "%s/host/sys/fs/cgroup/cgroup.controllers",
		 base);
	f = fopen(want, "w");
	ASSERT_TRUE(f != NULL);
	fclose(f);
	ASSERT_EQ(pod_cgroup__host_root(base, out, sizeof(out)), 0);
	snprintf(want, sizeof(want), "%s/host/sys/fs/cgroup", base);
	ASSERT_STREQ(out, want);
	/* nothing v2 */
	snprintf(base, sizeof(base), "%s/hostroot-v1", test__tmpdir());
	mkdir(base, 0755);
	mkpath(base, "sys/fs/cgroup/memory");
	ASSERT_EQ(pod_cgroup__host_root(base, out, sizeof(out)), -ENOENT);
}
