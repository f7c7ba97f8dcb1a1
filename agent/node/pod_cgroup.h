/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Pod -> container cgroup v2 directory -> cgroup id, from what the Pod object
 * says (metadata.uid, status.qosClass, status.containerStatuses[].containerID)
 * and a cgroup v2 mount. The id is what bpf_get_current_cgroup_id() returns
 * for the container's processes, i.e. the key of the BPF target map.
 *
 * The kubelet names the pod's cgroup after its QoS class and uid, and the
 * runtime names the container's cgroup after its id. Path shapes tried, in
 * order (k8s_integration.md §4.2; Pixie cgroup_path_resolver.cc, OBI
 * container.go):
 *   systemd:  kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice/<leaf>
 *             kubepods.slice/kubepods-pod<uid_>.slice/<leaf>       (Guaranteed)
 *             leaf = cri-containerd-<id>.scope | crio-<id>.scope | docker-<id>.scope
 *   cgroupfs: kubepods/<qos>/pod<uid>/<leaf>
 *             kubepods/pod<uid>/<leaf>                             (Guaranteed)
 *             leaf = <id> | crio-<id>
 * (<uid_>: the uid with dashes turned into underscores, as systemd wants.)
 * When none exists (a non-default --cgroup-root, kind nesting), a bounded
 * walk of the tree finds a directory named after the container id below a
 * directory named after the pod uid.
 *
 * No libbpf: unit-tested without root on fixture trees.
 */
#ifndef MM_AGENT_K8S_POD_CGROUP_H
#define MM_AGENT_K8S_POD_CGROUP_H

#include <stddef.h>
#include <stdint.h>

enum pod_qos {
	POD_QOS_GUARANTEED,
	POD_QOS_BURSTABLE,
	POD_QOS_BESTEFFORT,
};

enum pod_runtime {
	POD_RT_CONTAINERD,
	POD_RT_CRIO,
	POD_RT_DOCKER,
};

#define POD_CONTAINER_ID_MAX 128

struct pod_container_id {
	enum pod_runtime runtime;
	char id[POD_CONTAINER_ID_MAX]; /* lowercase hex, no scheme */
};

/*
 * status.qosClass ("Guaranteed", "Burstable", "BestEffort") -> enum.
 * Returns 0 or -EINVAL for anything else (a pod not yet admitted has none).
 */
int pod_cgroup__parse_qos(const char *qos_class, enum pod_qos *out);

/*
 * containerStatuses[].containerID ("containerd://<hex>", "cri-o://<hex>",
 * "docker://<hex>") -> runtime and id. Returns 0, -EINVAL for an empty or
 * malformed id (a container not started yet has none), -ENOTSUP for another
 * runtime.
 */
int pod_cgroup__parse_container_id(const char *cid,
				   struct pod_container_id *out);

/*
 * The cgroup directory of one container of a pod under the cgroup v2 mount
 * `root` (e.g. /sys/fs/cgroup, or /sys/fs/cgroup/unified on a hybrid host).
 * pod_uid is metadata.uid as the API gives it (with dashes). Writes the
 * directory to dir and its cgroup id to *cgid. Returns 0, -ENOENT when no
 * directory was found (the container is gone or not started), -EINVAL for
 * a malformed uid, -ENAMETOOLONG when dir is too small.
 */
int pod_cgroup__find(const char *root, const char *pod_uid, enum pod_qos qos,
		     const struct pod_container_id *c, char *dir, size_t len,
		     uint64_t *cgid);

/*
 * The host's cgroup v2 mount, to pass as `root` above: the first of
 * <prefix>/host/sys/fs/cgroup, <prefix>/host/sys/fs/cgroup/unified (the
 * DaemonSet mounts the host's tree there, read-only), <prefix>/sys/fs/cgroup,
 * <prefix>/sys/fs/cgroup/unified (hybrid hosts such as the test VM) that is a
 * cgroup v2 directory (has cgroup.controllers, which v1 hierarchies lack).
 * prefix is "" on a node. Inside a pod /sys/fs/cgroup is the pod's own
 * cgroup namespace, which is why the host tree comes first. Returns 0 or
 * -ENOENT.
 */
int pod_cgroup__host_root(const char *prefix, char *out, size_t len);

/*
 * The cgroup id of a cgroup v2 directory: the kernfs node id, read with
 * name_to_handle_at() on cgroup2 (as the kernel selftests' get_cgroup_id()
 * does) and the inode number elsewhere (fixture trees; on 64-bit kernels the
 * two are equal on cgroup2). Returns 0 or -errno.
 */
int pod_cgroup__id(const char *dir, uint64_t *cgid);

#endif /* MM_AGENT_K8S_POD_CGROUP_H */
