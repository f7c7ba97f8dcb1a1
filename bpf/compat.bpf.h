/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * What differs between the two builds of the data path object:
 *   - the default build (Linux 5.17+): bpf_loop() callbacks, task local
 *     storage, BTF task pointers;
 *   - the bounded build (-DMM_BOUNDED_LOOPS, milometer_bl.bpf.o; Linux
 *     5.10+): bounded loops (5.3), a hash keyed by thread id, the current
 *     task read through probe reads (bpf_get_current_task(), 4.8).
 * The agent probes the kernel and loads one (agent/loader.c). Two objects
 * rather than feature flags tested at run time: the default build's code
 * is the same instruction for instruction with or without the bounded one.
 *
 * A bounded loop is walked by the verifier once per iteration with its
 * body inlined, so nested loops multiply. In the bounded build the parser
 * loops' bodies are global functions (verified once, 5.6+) which take
 * scalars only before 5.12: they find their context again in the per-CPU
 * scratch and the connection hash (mm_lctx_of_scratch()).
 */
#ifndef MM_COMPAT_BPF_H
#define MM_COMPAT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"

#ifdef MM_BOUNDED_LOOPS
/* the connections the parser runs on: mm_conns, or TLS's plaintext ones */
#ifndef MM_BL_CONNS
#define MM_BL_CONNS mm_conns
#endif

/* up to N calls of CB(i, CTX) (N <= MAX), stopping when it returns non-zero */
#define MM_LOOP(max, n, cb, ctx)                                               \
	do {                                                                   \
		__u32 __n = (n);                                               \
		for (__u32 __i = 0; __i < (max); __i++)                        \
			if (__i >= __n || (cb)(__i, (ctx)))                    \
				break;                                         \
	} while (0)

static __always_inline struct task_struct *mm_current_task(void)
{
	return (struct task_struct *)bpf_get_current_task();
}

/* The thread's link (struct mm_link), created on demand when CREATE. */
static __always_inline struct mm_link *thread_link(bool create)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct mm_link *l = bpf_map_lookup_elem(&mm_thread_req, &tid);
	struct mm_link zero = {};

	if (l || !create)
		return l;
	bpf_map_update_elem(&mm_thread_req, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&mm_thread_req, &tid);
}

/* A thread id reused by the next thread must not find this one's link. */
static __always_inline void thread_link_drop(__u32 tid)
{
	bpf_map_delete_elem(&mm_thread_req, &tid);
}

/*
 * The parser loops' context, found again from the scratch: in the bounded
 * build the capture paths are sys_exit's, whose connection is
 * mm_conns[s->io_sk] (mm_fb_io), and TLS's (mm_tls_conns, the same key set
 * by call_done()); its parser is the one s->is_req names.
 */
static __always_inline bool mm_lctx_of_scratch(struct mm_lctx *x)
{
	__u32 zero = 0;
	__u64 key;

	x->s = bpf_map_lookup_elem(&mm_scratch, &zero);
	if (!x->s)
		return false;
	key = x->s->io_sk;
	x->c = bpf_map_lookup_elem(&MM_BL_CONNS, &key);
	if (!x->c)
		return false;
	x->p = x->s->is_req ? &x->c->req : &x->c->resp;
	return true;
}

/* CB_g(i): CB(i, ctx) as a global function, verified once on its own */
#define MM_LOOP_BODY(cb)                                                       \
	__noinline int cb##_g(__u32 i)                                         \
	{                                                                      \
		struct mm_lctx x;                                              \
                                                                               \
		if (!mm_lctx_of_scratch(&x))                                   \
			return 1;                                              \
		return (cb)(i, &x);                                            \
	}

/* a body MM_LOOP_BODY wraps: inline there, one stack frame less (512 B in all) */
#define MM_LOOP_CB static __always_inline long

/* MM_LOOP with CB's global function (MM_LOOP_BODY(CB)) as the body */
#define MM_LOOP_G(max, n, cb, ctx)                                             \
	do {                                                                   \
		__u32 __n = (n);                                               \
		for (__u32 __i = 0; __i < (max); __i++)                        \
			if (__i >= __n || cb##_g(__i))                         \
				break;                                         \
	} while (0)
#else
#define MM_LOOP(max, n, cb, ctx)   bpf_loop((n), (cb), (ctx), 0)
#define MM_LOOP_G(max, n, cb, ctx) bpf_loop((n), (cb), (ctx), 0)
#define MM_LOOP_BODY(cb)
#define MM_LOOP_CB static long

static __always_inline struct task_struct *mm_current_task(void)
{
	return bpf_get_current_task_btf();
}

static __always_inline struct mm_link *thread_link(bool create)
{
	return bpf_task_storage_get(
		&mm_thread_req, bpf_get_current_task_btf(), 0,
		create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* task storage goes with the task itself */
static __always_inline void thread_link_drop(__u32 tid)
{
}
#endif

#endif /* MM_COMPAT_BPF_H */
