/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Every map of the data path, one line of doc each. Prefixed mm_ so that
 * `bpftool map show` on a node says whose they are. Sizes that depend on the
 * node are set by the agent before load (bpf_map__set_max_entries).
 */
#ifndef MM_MAPS_BPF_H
#define MM_MAPS_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"

/* Processes (tgid) whose sockets are traced, and why (for listing). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct mm_target);
} mm_targets SEC(".maps");

/*
 * The same set as a bitmap over every possible tgid (PID_MAX_LIMIT = 4M):
 * the first check of every hook, an array lookup the JIT inlines. The agent
 * writes it through mmap with atomic ors; BPF sets bits at fork and exec.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, MM_TARGET_WORDS);
	__type(key, __u32);
	__type(value, __u64);
} mm_target_bits SEC(".maps");

/* Executable names (comm) whose new processes become targets at exec. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, char[MM_COMM_LEN]);
	__type(value, __u32);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} mm_target_comms SEC(".maps");

/* cgroup v2 ids whose processes become targets at exec, -> gateway slot. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, __u64);
	__type(value, __u32);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} mm_target_cgroups SEC(".maps");

/*
 * Per-socket HTTP state, in the socket itself (socket tracepoint mode): a
 * lookup is two loads off struct sock, and it is freed with the socket.
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mm_conn);
} mm_sk_conns SEC(".maps");

/*
 * Per-socket HTTP state by socket address (sys_exit fallback mode, where
 * the socket is reached by probe reads and sk storage cannot take it).
 * Not preallocated: a node uses a fraction of max_entries.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct mm_conn);
} mm_conns SEC(".maps");

/* A zeroed mm_conn to create mm_conns entries from (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_conn);
} mm_conn_zero SEC(".maps");

/*
 * What a connection needs now and then (struct mm_conn_ext), by conn_id:
 * its pipeline past MM_SLOTS_INLINE, the earlier reads of a request head
 * that spans reads and may go to user space; deleted when the connection
 * ends. Full: such requests are reported untracked, or with route unknown.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 4096);
	__type(key, __u64);
	__type(value, struct mm_conn_ext);
} mm_conn_exts SEC(".maps");

/*
 * A request head's struct mm_route_acc between two reads it spans, by
 * conn_id (route_acc.bpf.h): made the first time a connection's head is
 * cut, deleted when the connection ends. Full: the head's route is decided
 * in user space from its copy (MM_STAT_ROUTE_STATE_LOST).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 65536);
	__type(key, __u64);
	__type(value, struct mm_route_acc);
} mm_route_accs SEC(".maps");

/* A zeroed mm_conn_ext to create mm_conn_exts entries from. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_conn_ext);
} mm_conn_ext_zero SEC(".maps");

/*
 * The downstream request each proxy thread is handling now (upstream link),
 * in the thread's own storage: written once per request without a map
 * update call, gone with the thread.
 */
#ifndef MM_BOUNDED_LOOPS
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mm_link);
} mm_thread_req SEC(".maps");
#else
/*
 * Before task storage (5.11): by thread id, dropped at the thread's exit
 * (mm_exit); an LRU, as a missed exit must not fill it for good.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct mm_link);
} mm_thread_req SEC(".maps");
#endif

/*
 * Recent downstream requests by content, to link the upstream request: a
 * direct-mapped array indexed by a hash of (tgid, method, host, path), read
 * and written in place (inlined by the JIT), where an LRU hash update cost
 * more than the rest of the request. A slot another request took since is
 * a miss, and the link falls back to the thread's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MM_RECENT_SLOTS);
	__type(key, __u32);
	__type(value, struct mm_recent_slot);
} mm_recent SEC(".maps");

/*
 * Route decisions by (generation, method, host hash, path hash): most
 * requests repeat a few host/path pairs, and a hit replaces the vhost and
 * path lookups (up to 18 hash lookups for a deep prefix). Direct-mapped,
 * keyed by the generation, so a new route table never sees an old answer.
 */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MM_ROUTE_CACHE_SLOTS);
	__type(key, __u32);
	__type(value, struct mm_route_memo);
} mm_route_cache SEC(".maps");

/* Route table: host -> virtual host (written by the agent only). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 8192);
	__type(key, struct mm_vhost_key);
	__type(value, struct mm_vhost_val);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} mm_vhosts SEC(".maps");

/*
 * Listener port of an accepted socket, by (gateway slot, socket port): only
 * for Gateways with listeners on two ports or more (agent; MM_CFG_LISTENERS).
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct mm_listener_key);
	__type(value, __u32);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} mm_listeners SEC(".maps");

/* Route table: (vhost, path kind, path hash) -> ordered candidates (agent). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct mm_route_key);
	__type(value, struct mm_route_cands);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} mm_routes SEC(".maps");

/* Run-time settings (route generation), written by the agent only. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_config);
	__uint(map_flags, BPF_F_RDONLY_PROG);
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

/*
 * [0]: the data path the capture hooks tail-call, set by the agent:
 * mm_sock_io (socket tracepoints) or mm_fb_io (sys_exit).
 */
struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} mm_sock_progs SEC(".maps");

/* Per-CPU HTTP/2 data event under construction. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_h2_rec);
} mm_h2_buf SEC(".maps");

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

static __always_inline bool is_target(__u32 tgid)
{
	__u32 w = tgid / 64;
	__u64 *bits = bpf_map_lookup_elem(&mm_target_bits, &w);

	return bits && (*bits & (1ULL << (tgid & 63)));
}

static __always_inline void target_bit_set(__u32 tgid, bool on)
{
	__u32 w = tgid / 64;
	__u64 *bits = bpf_map_lookup_elem(&mm_target_bits, &w);

	if (!bits)
		return;
#ifdef MM_BOUNDED_LOOPS
	/*
	 * No atomic or/and before 5.12, only add: a bit is added only when
	 * clear and subtracted only when set. One tgid's fork, exec and exit
	 * do not race one another; other tgids' bits add without carries.
	 */
	__u64 bit = 1ULL << (tgid & 63);

	if (on && !(*bits & bit))
		__sync_fetch_and_add(bits, bit);
	else if (!on && (*bits & bit))
		__sync_fetch_and_add(bits, -bit);
#else
	if (on)
		__sync_fetch_and_or(bits, 1ULL << (tgid & 63));
	else
		__sync_fetch_and_and(bits, ~(1ULL << (tgid & 63)));
#endif
}

/*
 * A full memory barrier: the stores to c before it are seen by every CPU
 * before the loads from c after it. conn_finish() (the proxy's shutdown()
 * or close()) may run on one CPU while another parses the same socket's
 * I/O, and each side's map entries are keyed by conn_id: the closer sets
 * finished, then tests has_ext / ra_held and deletes; the parser makes an
 * entry and sets the flag, then tests finished and deletes. With a barrier
 * on both sides one of them sees the other's store (Dekker), so no entry
 * outlives its connection (test_close_race: 5-35 of 3 000 connections
 * left an mm_conn_exts entry without it). Neither clears a flag it did not
 * see set (pipe_free(), route_acc_drop()): a late 0 would hide the entry
 * from both. BPF has no fence instruction, but its fetching atomics are
 * fully ordered (the JITs emit a locked instruction, or one with
 * acquire-release and a barrier); clang emits one for a fetch-add of 0
 * whose value is used (as a fetch-or of 0). conn_id does not change: it
 * only gives the atomic an aligned word.
 */
static __always_inline void conn_fence(struct mm_conn *c)
{
#ifdef MM_BOUNDED_LOOPS
	/*
	 * No fetching atomics before 5.12: a plain atomic add, which x86-64's
	 * JIT emits as a locked instruction, a full barrier there (not on
	 * arm64, where the bounded build is not proven).
	 */
	__u64 zero = 0;

	/* opaque: clang turns an add of a constant 0 into an or */
	asm volatile("" : "+r"(zero));
	__sync_fetch_and_add(&c->conn_id, zero);
	asm volatile("" ::: "memory");
#else
	__u64 v = __sync_fetch_and_add(&c->conn_id, 0);

	asm volatile("" : : "r"(v));
#endif
}

/*
 * Orders this CPU's earlier stores to c before its later ones (and loads
 * likewise) where the CPU itself does not: arm64. x86 keeps both orders
 * (TSO): the compiler's barrier is enough there.
 */
static __always_inline void conn_order(struct mm_conn *c)
{
#ifdef __TARGET_ARCH_arm64
	conn_fence(c);
#else
	asm volatile("" ::: "memory");
#endif
}

#endif /* MM_MAPS_BPF_H */
