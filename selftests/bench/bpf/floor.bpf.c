// SPDX-License-Identifier: GPL-2.0-only
/*
 * Floors for make bench: what attaching to the socket tracepoints costs a
 * gateway before milometer's own work, at four levels of doing less
 * (bench_floor.c loads one of them; the bench runs them side by side with
 * the agent, agent off as the reference):
 *   empty  both programs return at once: the price of the attach point
 *          (retpolined dispatch, the tracepoint's own work);
 *   hook   the process filter (the agent's tgid bitmap) and a 64-byte
 *          socket-storage state created on first sight, bytes counted:
 *          any design that keeps state per socket pays this;
 *   read   hook, plus the syscall's buffer located through its saved
 *          registers (first iovec for readv/writev) and its first
 *          FL_READ bytes read into per-CPU memory, nothing sent: the
 *          least an agent that parses in the kernel does on each I/O;
 *   copy   hook, plus what the agents that parse in user space do in the
 *          kernel (Beyla, Pixie): the syscall's buffer located through
 *          its saved registers (first iovec for readv/writev), up to
 *          FL_PREFIX bytes of it copied into a ring-buffer record with a
 *          time stamp, one record per socket I/O of the proxy. The user-
 *          space side (parsing those records) is not run: a lower bound
 *          for that design;
 *   skb    not the socket tracepoints: a cgroup_skb ingress + egress pair
 *          attached to the gateway's own cgroup v2 (no other process
 *          runs it), which reads the first FL_READ bytes of each
 *          payload-carrying TCP packet (bpf_skb_load_bytes at the payload
 *          offset: kernel memory, no user copy) into per-CPU memory and
 *          keeps the same 64-byte state per socket (socket storage through
 *          the packet's socket): the least a design that parses the
 *          request from the packet does.
 * Not the data path: no parsing, no routes, no exchange; it exists to put a
 * measured number under "this target is out of reach for any design here".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_tracing.h>

#include "bpf/arch.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define FL_LEVEL_EMPTY 0
#define FL_LEVEL_HOOK  1
#define FL_LEVEL_READ  2
#define FL_LEVEL_COPY  3
#define FL_LEVEL_SKB   4

#define FL_PREFIX       256
#define FL_READ         64    /* a request line, a status line */
#define FL_TARGET_WORDS 65536 /* as mm_target_bits: PID_MAX_LIMIT bits */

const volatile __u32 fl_level = FL_LEVEL_EMPTY;

struct fl_conn {
	__u64 bytes;
	__u64 ios;
	__u64 first_ns;
	__u8 pad[40];
};
_Static_assert(sizeof(struct fl_conn) == 64, "fl_conn is one cache line");

struct fl_record {
	__u64 sk;
	__u64 ts;
	__u32 len;
	__u32 dir;
	__u8 data[FL_PREFIX];
};

/* tgid bitmap of the proxy's processes, as the agent's mm_target_bits */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FL_TARGET_WORDS);
	__type(key, __u32);
	__type(value, __u64);
	__uint(map_flags, BPF_F_RDONLY_PROG);
} fl_target_bits SEC(".maps");

/* per-socket state of the hook and copy levels */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct fl_conn);
} fl_sk_conns SEC(".maps");

/* the copy level's records, drained by bench_floor without wakeups */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} fl_records SEC(".maps");

/* records the ring buffer had no room for (the reader fell behind) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fl_dropped SEC(".maps");

struct fl_iovec {
	__u64 base;
	__u64 len;
};

/* the read level's bytes (per CPU: not on the stack, as a parser's are not) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8[FL_READ]);
} fl_scratch SEC(".maps");

static __always_inline bool fl_is_target(__u32 tgid)
{
	__u32 w = tgid / 64;
	__u64 *bits = bpf_map_lookup_elem(&fl_target_bits, &w);

	return bits && (*bits & (1ULL << (tgid & 63)));
}

/* the syscall's buffer (the first iovec's), 0 if it has none we read */
static __always_inline __u64 fl_buf(void)
{
	struct pt_regs *regs =
		(struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	__u64 nr = MM_SYSCALL_NR(regs);
	struct fl_iovec v;

	if (nr == NR_read || nr == NR_write || nr == NR_recvfrom ||
	    nr == NR_sendto)
		return MM_SYSCALL_ARG2(regs);
	if ((nr == NR_readv || nr == NR_writev) &&
	    !bpf_probe_read_user(&v, sizeof(v), (void *)MM_SYSCALL_ARG2(regs)))
		return v.base;
	return 0;
}

static __always_inline void fl_read(int ret)
{
	__u64 buf = fl_buf();
	__u32 n = ret, zero = 0;
	__u8 *b;

	b = bpf_map_lookup_elem(&fl_scratch, &zero);
	if (!buf || !b)
		return;
	if (n > FL_READ)
		n = FL_READ;
	bpf_probe_read_user(b, n, (void *)buf);
}

static __always_inline void fl_copy(struct sock *sk, int ret, __u32 dir)
{
	__u64 buf = fl_buf();
	struct fl_record *r;
	__u32 n, zero = 0;
	__u64 *d;

	if (!buf)
		return;
	r = bpf_ringbuf_reserve(&fl_records, sizeof(*r), 0);
	if (!r) {
		d = bpf_map_lookup_elem(&fl_dropped, &zero);
		if (d)
			*d += 1;
		return;
	}
	n = ret;
	if (n > FL_PREFIX)
		n = FL_PREFIX;
	r->sk = (__u64)sk;
	r->ts = bpf_ktime_get_ns();
	r->len = n;
	r->dir = dir;
	if (bpf_probe_read_user(r->data, n, (void *)buf))
		r->len = 0;
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

static __always_inline int fl_io(struct sock *sk, int ret, __u32 dir)
{
	struct fl_conn *c;

	if (fl_level == FL_LEVEL_EMPTY)
		return 0;
	if (ret <= 0 || !fl_is_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	c = bpf_sk_storage_get(&fl_sk_conns, sk, 0,
			       BPF_SK_STORAGE_GET_F_CREATE);
	if (!c)
		return 0;
	c->bytes += ret;
	c->ios++;
	if (fl_level == FL_LEVEL_READ)
		fl_read(ret);
	else if (fl_level == FL_LEVEL_COPY)
		fl_copy(sk, ret, dir);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(fl_sock_recv, struct sock *sk, int ret, int flags)
{
	return fl_io(sk, ret, 0);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(fl_sock_send, struct sock *sk, int ret, int flags)
{
	return fl_io(sk, ret, 1);
}

#define FL_ETH_P_IP    0x0800
#define FL_ETH_P_IPV6  0x86DD
#define FL_IPPROTO_TCP 6

/* The payload's offset in the packet (skb->data is the network header in a
 * cgroup_skb program), 0 if it is not TCP or carries no payload. */
static __always_inline __u32 fl_skb_payload(struct __sk_buff *skb)
{
	__u8 vihl, proto, doff;
	__u32 off;

	if (skb->protocol == bpf_htons(FL_ETH_P_IP)) {
		if (bpf_skb_load_bytes(skb, 0, &vihl, 1) ||
		    bpf_skb_load_bytes(skb, 9, &proto, 1))
			return 0;
		off = (vihl & 0xf) * 4;
	} else if (skb->protocol == bpf_htons(FL_ETH_P_IPV6)) {
		if (bpf_skb_load_bytes(skb, 6, &proto, 1))
			return 0;
		off = 40; /* extension headers: not on a gateway's TCP */
	} else {
		return 0;
	}
	if (proto != FL_IPPROTO_TCP ||
	    bpf_skb_load_bytes(skb, off + 12, &doff, 1))
		return 0;
	off += (doff >> 4) * 4;
	return off < skb->len ? off : 0;
}

static __always_inline int fl_skb(struct __sk_buff *skb)
{
	struct bpf_sock *bs = skb->sk;
	struct fl_conn *c;
	__u32 off, n, zero = 0;
	__u8 *b;

	if (!bs)
		return 1;
	bs = bpf_sk_fullsock(bs);
	if (!bs)
		return 1;
	off = fl_skb_payload(skb);
	if (!off)
		return 1;
	n = skb->len - off;
	c = bpf_sk_storage_get(&fl_sk_conns, bs, 0,
			       BPF_SK_STORAGE_GET_F_CREATE);
	if (!c)
		return 1;
	c->bytes += n;
	c->ios++;
	b = bpf_map_lookup_elem(&fl_scratch, &zero);
	if (!b)
		return 1;
	if (!n)
		return 1;
	if (n > FL_READ)
		n = FL_READ;
	/* 1..FL_READ on the register the helper is given (the verifier's view) */
	barrier_var(n);
	n = ((n - 1) & (FL_READ - 1)) + 1;
	bpf_skb_load_bytes(skb, off, b, n);
	return 1;
}

SEC("cgroup_skb/ingress")
int fl_skb_in(struct __sk_buff *skb)
{
	return fl_skb(skb);
}

SEC("cgroup_skb/egress")
int fl_skb_out(struct __sk_buff *skb)
{
	return fl_skb(skb);
}
