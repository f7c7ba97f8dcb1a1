/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The agent's own cgroup memory limit, and the hard caps derived from it, so
 * that a pod with a small limit degrades (connections past the cap counted
 * as conn_map_full, label sets past the cap folded into the overflow series
 * and counted, OTLP batches past the queue dropped and counted) instead of
 * being OOM-killed. The limit is what a VPA in per-node scope sets
 * (vpa-daemonset-kep.md), so the caps follow each node's sizing.
 *
 * Pure functions over text and a directory tree: no libbpf, unit-tested on
 * fixture trees.
 */
#ifndef MM_AGENT_K8S_MEM_LIMIT_H
#define MM_AGENT_K8S_MEM_LIMIT_H

#include <stddef.h>
#include <stdint.h>

struct agent_opts;

enum mem_limit_source {
	MEM_LIMIT_NONE,
	MEM_LIMIT_V2, /* memory.max */
	MEM_LIMIT_V1, /* memory.limit_in_bytes */
};

struct mem_limit {
	uint64_t bytes; /* 0 when unlimited */
	enum mem_limit_source source;
	char dir[512]; /* the cgroup whose limit is the smallest */
};

/*
 * From /proc/self/cgroup text: the cgroup v2 path ("0::/a/b") and the v1
 * memory controller's path ("N:memory:/a/b", also in a joint list such as
 * "N:memory,foo:/a/b"). An absent one is written as "". Returns 0 or
 * -ENAMETOOLONG.
 */
int mem_limit__parse_proc_cgroup(const char *text, char *v2, size_t v2len,
				 char *v1, size_t v1len);

/*
 * The effective limit of the cgroup at `path` (as /proc/self/cgroup gives
 * it) below the mounts v2_root (cgroup2) and v1_root (v1 memory controller;
 * either may be NULL): the smallest memory.max / memory.limit_in_bytes of
 * the cgroup and its ancestors, because a pod-level limit binds its
 * containers too. v2 wins when both name a limit (the unified hierarchy is
 * the one the kubelet writes on a v2 node). Returns 0 (out->bytes 0: none).
 */
int mem_limit__read(const char *v2_root, const char *v2_path,
		    const char *v1_root, const char *v1_path,
		    struct mem_limit *out);

struct mem_caps {
	uint32_t max_connections; /* mm_conns entries */
	uint32_t ringbuf_bytes;   /* power of two */
	uint32_t max_series;      /* per metric */
	uint32_t otlp_queue_bytes;
	uint32_t conn_bytes; /* input: mem_limit__conn_bytes() */
};

/*
 * What one tracked connection costs the memory cgroup, from the key and
 * value sizes of the map that holds it (the loaded BPF object's mm_conns):
 * its hash element as the kernel allocates it (header, bpf_mem_alloc node,
 * kmalloc size class, bucket share) or its socket storage element,
 * whichever is larger.
 */
uint32_t mem_limit__conn_bytes(uint32_t key_size, uint32_t value_size);

/*
 * Lower `caps` (the configured values; caps->conn_bytes is the cost of one
 * connection, 0 for an empty entry's) so that they fit in `limit_bytes`
 * (0: no limit, caps unchanged). Never raises a cap. Returns the bytes the
 * caps may use at most (the budget) or 0 when there is no limit.
 */
uint64_t mem_limit__derive_caps(uint64_t limit_bytes, struct mem_caps *caps);

/*
 * At startup, before the BPF maps and the metric store are created: read
 * this process's limit from /proc/self/cgroup and /sys/fs/cgroup(/unified,
 * /memory) and lower o->max_connections, ->ringbuf_bytes, ->max_series and
 * ->otlp_queue_bytes to fit (a connection costing conn_bytes), saying so
 * on stderr when it lowered anything.
 * The limit found is written to *out (may be NULL). Returns 0.
 */
int mem_limit__apply(struct agent_opts *o, uint32_t conn_bytes,
		     struct mem_limit *out);

#endif /* MM_AGENT_K8S_MEM_LIMIT_H */
