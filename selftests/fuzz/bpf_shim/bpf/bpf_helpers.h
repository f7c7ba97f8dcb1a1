/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Stand-in for libbpf's <bpf/bpf_helpers.h> when the bpf/ headers are compiled
 * as ordinary C for the fuzzer (selftests/fuzz/bpf_parser_glue.c). Map
 * definitions become plain globals (libbpf's own __uint/__type expand to
 * valid C); helpers are declared here and defined by the glue, which knows
 * the maps. Only what the data path's headers call is declared: a new helper
 * in them fails this build until the glue emulates it.
 */
#ifndef MM_FUZZ_BPF_HELPERS_H
#define MM_FUZZ_BPF_HELPERS_H

#ifndef NULL
#define NULL ((void *)0) /* libbpf's bpf_helpers.h defines it too */
#endif
#define SEC(name)
#define __always_inline    inline __attribute__((always_inline))
#define __noinline         __attribute__((noinline))
#define __uint(name, val)  int(*name)[val]
#define __type(name, val)  typeof(val) *name
#define __array(name, val) typeof(val) *name[]

struct task_struct;

typedef long (*fzb_loop_cb)(__u32 i, void *ctx);

static void *bpf_map_lookup_elem(void *map, const void *key);
static long bpf_map_update_elem(void *map, const void *key, const void *value,
				__u64 flags);
static long bpf_map_delete_elem(void *map, const void *key);
static long bpf_probe_read_user(void *dst, __u32 size, const void *src);
static long bpf_probe_read_kernel(void *dst, __u32 size, const void *src);
static long bpf_loop(__u32 nr_loops, fzb_loop_cb cb, void *ctx, __u64 flags);
static void *bpf_ringbuf_reserve(void *ringbuf, __u64 size, __u64 flags);
static void bpf_ringbuf_submit(void *data, __u64 flags);
static void bpf_ringbuf_discard(void *data, __u64 flags);
static long bpf_ringbuf_output(void *ringbuf, void *data, __u64 size,
			       __u64 flags);
static __u64 bpf_ringbuf_query(void *ringbuf, __u64 flags);
static __u64 bpf_ktime_get_ns(void);
static __u32 bpf_get_smp_processor_id(void);
static __u64 bpf_get_current_pid_tgid(void);
static struct task_struct *bpf_get_current_task_btf(void);
static void *bpf_task_storage_get(void *map, struct task_struct *task,
				  void *value, __u64 flags);

#endif /* MM_FUZZ_BPF_HELPERS_H */
