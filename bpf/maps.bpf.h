/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Every map of the data path, one line of doc each. Prefixed mm_ so that
 * `bpftool map show` on a node says whose they are. Sizes that depend on the
 * node are set by the agent before load (bpf_map__set_max_entries).
 */
#ifndef MM_MAPS_BPF_H
#define MM_MAPS_BPF_H

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"

/* Processes (tgid) whose sockets are traced, and why. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct mm_target);
} mm_targets SEC(".maps");

/* Executable names (comm) whose new processes become targets at exec. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, char[MM_COMM_LEN]);
	__type(value, __u32);
} mm_target_comms SEC(".maps");

/* cgroup v2 ids whose processes become targets at exec or fork. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u32);
} mm_target_cgroups SEC(".maps");

/*
 * Syscall arguments saved at sys_enter for sys_exit, in the thread's own
 * storage: a pointer off task_struct instead of a hash update and delete
 * per syscall (map updates are indirect calls, costly under retpolines).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mm_args);
} mm_args SEC(".maps");

/*
 * Per-socket HTTP state, by (tgid, fd). Not preallocated: an entry is ~3 KiB
 * (32 pipelined requests) and most nodes use a fraction of max_entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, struct mm_conn_key);
	__type(value, struct mm_conn);
} mm_conns SEC(".maps");

/*
 * The downstream request each proxy thread is handling now (upstream link),
 * in the thread's own storage: written once per request without a map
 * update call, gone with the thread.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mm_link);
} mm_thread_req SEC(".maps");

/* Recent downstream requests by content, to link the upstream request. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	/* per-CPU LRU lists: no global lock on the proxy's hot path */
	__uint(map_flags, BPF_F_NO_COMMON_LRU);
	__uint(max_entries, 16384);
	__type(key, struct mm_recent_key);
	__type(value, struct mm_link);
} mm_recent SEC(".maps");

/* Route table: host -> virtual host. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct mm_vhost_key);
	__type(value, struct mm_vhost_val);
} mm_vhosts SEC(".maps");

/* Route table: (vhost, path kind, path hash) -> ordered candidates. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct mm_route_key);
	__type(value, struct mm_route_cands);
} mm_routes SEC(".maps");

/* Run-time settings (route generation). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_config);
} mm_config SEC(".maps");

/* Completed exchanges and deferred request heads, to user space. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} mm_events SEC(".maps");

/* Failure and activity counters, per CPU, indexed by enum mm_stat. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MM_STAT__COUNT);
	__type(key, __u32);
	__type(value, __u64);
} mm_stats SEC(".maps");

/* Per-CPU copy of the user bytes being parsed (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_scratch);
} mm_scratch SEC(".maps");

/* Per-CPU connection-id counter (ids are cpu << 48 | count). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} mm_conn_ids SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&mm_stats, &idx);

	if (v)
		*v += 1;
}

static __always_inline void stat_add(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&mm_stats, &idx);

	if (v)
		*v += n;
}

#endif /* MM_MAPS_BPF_H */
