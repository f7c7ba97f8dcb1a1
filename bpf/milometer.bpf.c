// SPDX-License-Identifier: GPL-2.0-only
/*
 * milometer data path: HTTP/1.x exchanges of the gateway proxy, parsed and
 * attributed to (HTTPRoute, rule) in the kernel, one ring-buffer event per
 * exchange. No kprobes, no fentry, no per-syscall tracepoints.
 *
 * Socket I/O, one of two capture modes chosen by the agent at load time
 * (enum mm_capture_mode):
 *   - tp_btf/sock_recv_length, tp_btf/sock_send_length (6.3+): fire only on
 *     socket I/O, with the socket; the user buffer comes from the syscall's
 *     saved registers (bpf_task_pt_regs). Connection state lives in the
 *     socket (sk storage). Nothing runs on other syscalls. Both hooks
 *     tail-call one program, mm_sock_io.
 *   - tp_btf/sys_exit (fallback): every syscall exit of the node, filtered
 *     on the syscall number and the process bitmap before anything else;
 *     arguments from the same saved registers (Falco's modern probe does
 *     this), the socket by probe reads, state in a hash by socket address;
 *     it tail-calls the data path, mm_fb_io.
 * Both: tp_btf/inet_sock_set_state and tcp_destroy_sock (connect() binds an
 * upstream connection to the request being served; close reports what is
 * still pending), and sched fork/exec/exit keep the target set.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/http_parse.bpf.h"
#include "bpf/route_lookup.bpf.h"
#include "bpf/exchange.bpf.h"
#include "bpf/capture.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by the agent before load; the verifier drops the other mode's code. */
const volatile __u32 mm_capture_mode = MM_CAPTURE_SOCK_TP;

/* T is the current task: each helper call is a mispredicted return here */
static __always_inline void io_args(struct task_struct *t, struct pt_regs *regs,
				    struct mm_io_args *a)
{
	a->kind = compat_syscall(t) ? MM_IO_NONE : io_kind(MM_SYSCALL_NR(regs));
	a->buf = MM_SYSCALL_ARG2(regs);
	a->cnt = MM_SYSCALL_ARG3(regs);
}

/* Socket tracepoint mode ------------------------------------------------- */

static __always_inline int sock_io(struct sock *sk, int ret, int flags,
				   bool is_read)
{
	struct mm_io_args a = {};
	struct task_struct *t;
	struct tcp_sock *tp;
	struct mm_conn *c;

	/*
	 * The hooks below filtered on the process and on ret < 0; the tgid is
	 * asked for again only for a new connection (a helper call, and its
	 * return, per I/O otherwise).
	 */
	/*
	 * recv(MSG_PEEK) leaves the bytes in the socket: nginx peeks to test
	 * idle keep-alive connections; parsing them would read them twice.
	 */
	if (is_read && (flags & MSG_PEEK_))
		return 0;
	c = bpf_sk_storage_get(&mm_sk_conns, sk, 0, 0);
	if (!ret) {
		if (c && is_read && !c->finished)
			capture_eof(c);
		return 0;
	}
	if (!c) {
		if (!is_tcp(sk->__sk_common.skc_family, sk->sk_type,
			    sk->sk_protocol))
			return 0;
		c = bpf_sk_storage_get(&mm_sk_conns, sk, 0,
				       BPF_SK_STORAGE_GET_F_CREATE);
		if (!c) {
			stat_inc(MM_STAT_CONN_MAP_FULL);
			return 0;
		}
		conn_init(c, bpf_get_current_pid_tgid() >> 32, MM_ROLE_UNKNOWN,
			  0, sk->__sk_common.skc_num);
		tp = bpf_skc_to_tcp_sock(sk);
		c->lazy = tp && !tcp_first_io(tp, ret, is_read);
	}
	if (c->finished)
		return 0;
	t = mm_current_task();
	io_args(t, (struct pt_regs *)bpf_task_pt_regs(t), &a);
	capture_io(c, &a, (__u64)sk, ret, is_read);
	return 0;
}

/*
 * Both socket tracepoints run one program: its code (most of this object)
 * is then in the CPU's caches once, not twice. The hooks filter on the
 * process and tail-call it (a patched direct jump).
 */
SEC("tp_btf/sock_recv_length")
int BPF_PROG(mm_sock_io, struct sock *sk, int ret, int flags)
{
	__u32 zero = 0;
	struct mm_scratch *s = bpf_map_lookup_elem(&mm_scratch, &zero);

	if (!s)
		return 0;
	return sock_io(sk, ret, flags, s->io_read);
}

static __always_inline int sock_hook(void *ctx, int ret, bool is_read)
{
	__u32 zero = 0;
	struct mm_scratch *s;

	if (mm_capture_mode != MM_CAPTURE_SOCK_TP || ret < 0 ||
	    !is_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	s = bpf_map_lookup_elem(&mm_scratch, &zero);
	if (!s)
		return 0;
	s->io_read = is_read;
	bpf_tail_call(ctx, &mm_sock_progs, 0);
	return 0;
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(mm_sock_recv, struct sock *sk, int ret, int flags)
{
	return sock_hook(ctx, ret, true);
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(mm_sock_send, struct sock *sk, int ret, int flags)
{
	return sock_hook(ctx, ret, false);
}

/* sys_exit fallback mode ------------------------------------------------- */

static __always_inline struct mm_conn *fb_conn_create(__u64 key)
{
	__u32 zero = 0;
	struct mm_conn *init = bpf_map_lookup_elem(&mm_conn_zero, &zero);
	struct mm_conn *old;

	if (!init)
		return NULL;
	/* a socket address reused after a missed close starts afresh */
	old = bpf_map_lookup_elem(&mm_conns, &key);
	if (old) {
		pipe_free(old);
		route_acc_drop(old);
	}
	if (bpf_map_update_elem(&mm_conns, &key, init, BPF_ANY)) {
		stat_inc(MM_STAT_CONN_MAP_FULL);
		return NULL;
	}
	return bpf_map_lookup_elem(&mm_conns, &key);
}

SEC("tp_btf/sys_exit")
int BPF_PROG(mm_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 nr, skaddr;
	struct mm_scratch *s;
	struct task_struct *t;
	__u32 zero = 0;
	struct sock *sk;
	struct mm_conn *c;
	__u32 tgid;
	bool is_read;

	if (mm_capture_mode != MM_CAPTURE_SYS_EXIT)
		return 0;
	nr = MM_SYSCALL_NR(regs);
	if (io_kind(nr) == MM_IO_NONE || ret < 0)
		return 0;
	tgid = bpf_get_current_pid_tgid() >> 32;
	if (!is_target(tgid))
		return 0;
	t = mm_current_task();
	if (compat_syscall(t))
		return 0;
	is_read = nr == NR_read || nr == NR_readv || nr == NR_recvfrom ||
		  nr == NR_recvmsg;
	if ((nr == NR_recvfrom && (MM_SYSCALL_ARG4(regs) & MSG_PEEK_)) ||
	    (nr == NR_recvmsg && (MM_SYSCALL_ARG3(regs) & MSG_PEEK_)))
		return 0;
	skaddr = sock_of_fd(MM_SYSCALL_ARG1(regs));
	if (!skaddr)
		return 0;
	c = bpf_map_lookup_elem(&mm_conns, &skaddr);
	if (!ret) {
		if (c && is_read && !c->finished)
			capture_eof(c);
		return 0;
	}
	if (!c) {
		sk = (struct sock *)skaddr;
		if (!is_tcp(BPF_CORE_READ(sk, __sk_common.skc_family),
			    BPF_CORE_READ(sk, sk_type),
			    BPF_CORE_READ(sk, sk_protocol)))
			return 0;
		c = fb_conn_create(skaddr);
		if (!c)
			return 0;
		conn_init(c, tgid, MM_ROLE_UNKNOWN, skaddr, 0);
		c->lazy =
			!tcp_first_io((struct tcp_sock *)skaddr, ret, is_read);
	}
	if (c->finished)
		return 0;
	s = bpf_map_lookup_elem(&mm_scratch, &zero);
	if (!s)
		return 0;
	s->io_read = is_read;
	s->io_sk = skaddr;
	bpf_tail_call(ctx, &mm_sock_progs, 0);
	return 0;
}

/*
 * The fallback's data path, tail-called by mm_sys_exit: verified on its
 * own, as mm_sock_io is. Inline in mm_sys_exit, the two took 999 877 of the
 * verifier's 1M insns on 6.18 (callbacks are verified as loops since 6.7),
 * and one more check in the parser did not load. The connection is looked
 * up a second time here (a pointer cannot cross the tail call): with the
 * find-or-create moved in, the verifier walks the parse once per path and
 * stops at 1 000 001 insns.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(mm_fb_io, struct pt_regs *regs, long ret)
{
	struct mm_io_args a = {};
	struct mm_scratch *s;
	struct mm_conn *c;
	__u32 zero = 0;
	__u64 key;

	s = bpf_map_lookup_elem(&mm_scratch, &zero);
	if (!s)
		return 0;
	key = s->io_sk;
	c = bpf_map_lookup_elem(&mm_conns, &key);
	if (!c)
		return 0;
	io_args(mm_current_task(), regs, &a);
	capture_io(c, &a, key, ret, s->io_read);
	return 0;
}

/* Both modes: connection lifecycle from TCP state changes ---------------- */

static __always_inline struct mm_conn *state_conn(struct sock *sk, bool create)
{
	__u64 key = (__u64)sk;
	struct mm_conn *c;

	if (mm_capture_mode == MM_CAPTURE_SOCK_TP)
		return bpf_sk_storage_get(&mm_sk_conns, sk, 0,
					  create ? BPF_SK_STORAGE_GET_F_CREATE
						 : 0);
	c = bpf_map_lookup_elem(&mm_conns, &key);
	if (!c && create)
		c = fb_conn_create(key);
	return c;
}

/*
 * CLOSE -> SYN_SENT runs inside connect(), on the proxy's thread: an
 * upstream connection, bound to the downstream request the thread serves
 * (its first request may be written in a later event-loop turn, after the
 * thread has read other requests). FIN_WAIT1 / LAST_ACK come from the
 * proxy's own close() or shutdown(), after its last write: what is still
 * pending then was aborted. A reset from the peer (-> CLOSE, in softirq)
 * is not an end yet: on loopback it can land between the proxy's
 * tcp_sendmsg() and the send tracepoint of the response it answers, so
 * such a connection ends at tcp_destroy_sock below.
 */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(mm_tcp_state, struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	bool reborn = false;
	struct mm_link *l;
	struct mm_conn *c;
	__u32 tgid;

	if (newstate == TCP_SYN_SENT_) {
		tgid = bpf_get_current_pid_tgid() >> 32;
		if (!is_target(tgid))
			return 0;
		c = state_conn(sk, true);
		if (!c)
			return 0;
		if (mm_capture_mode != MM_CAPTURE_SOCK_TP)
			__builtin_memset(&c->bind, 0, sizeof(c->bind));
		conn_init(c, tgid, MM_ROLE_UP, 0, 0);
		c->connect_ns = bpf_ktime_get_ns();
		l = thread_link(false);
		if (l && l->valid) {
			c->bind = *l;
			c->bind_valid = 1;
		}
		return 0;
	}
	if (newstate == TCP_ESTABLISHED_ && oldstate == TCP_SYN_SENT_) {
		c = state_conn(sk, false);
		if (c)
			c->established = 1;
		return 0;
	}
	/*
	 * A socket born from a listener (inet_csk_clone_lock(), softirq),
	 * sys_exit mode: an entry at its address is an earlier socket's whose
	 * end went unseen, ended here. Under load an mm_conns entry now and
	 * then outlives its socket (a tracing program's run is also skipped
	 * when its hook fires inside its own run on the same CPU), and the
	 * next socket allocated at that address would find it finished and go
	 * unseen. sk storage is freed with its socket.
	 */
	if (newstate == TCP_SYN_RECV_) {
		if (mm_capture_mode == MM_CAPTURE_SOCK_TP)
			return 0;
		reborn = true;
	} else if (newstate != TCP_FIN_WAIT1_ && newstate != TCP_LAST_ACK_) {
		return 0;
	}
	c = state_conn(sk, false);
	if (!c)
		return 0;
	conn_finish(c, bpf_ktime_get_ns());
	if (reborn)
		bpf_map_delete_elem(&mm_conns, &key);
	return 0;
}

/* The socket is going away (close of a reset socket, end of any other). */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(mm_tcp_destroy, struct sock *sk)
{
	struct mm_conn *c = state_conn(sk, false);
	__u64 key = (__u64)sk;

	if (!c)
		return 0;
	conn_finish(c, bpf_ktime_get_ns());
	if (mm_capture_mode != MM_CAPTURE_SOCK_TP)
		bpf_map_delete_elem(&mm_conns, &key);
	return 0;
}

/* Target processes ------------------------------------------------------- */

/*
 * Set by the agent while TLS capture is on (its uprobes are per process),
 * cleared by the fork that sends an event and set again when the agent has
 * scanned: forks in a burst (a reload) wake it once. A race between two
 * CPUs costs a second event, nothing else.
 */
volatile __u32 mm_fork_notify;

/* Children of a traced process are traced: nginx reload forks new workers. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(mm_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct mm_target t = { .source = MM_TGT_FORK }, *pt;
	struct mm_fork_event *e;

	if (ctgid == ptgid || !is_target(ptgid))
		return 0;
	/* a worker serves the Gateway its master serves */
	pt = bpf_map_lookup_elem(&mm_targets, &ptgid);
	if (pt)
		t.gw = pt->gw;
	/* full: still traced (the bit), but on the default route table */
	if (bpf_map_update_elem(&mm_targets, &ctgid, &t, BPF_ANY))
		stat_inc(MM_STAT_TARGETS_FULL);
	target_bit_set(ctgid, true);
	stat_inc(MM_STAT_FORKS);
	/*
	 * Until its uprobes are attached, a new worker's TLS calls are unseen
	 * (apache's first SSL_read after a handshake even needs no syscall to
	 * bind by later: mod_ssl buffered the request). A child sharing the
	 * parent's mm (vfork, posix_spawn) is about to exec: no wakeup.
	 */
	if (!mm_fork_notify ||
	    BPF_CORE_READ(child, mm) == BPF_CORE_READ(parent, mm))
		return 0;
	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e), 0);
	if (e) {
		mm_fork_notify = 0;
		e->type = MM_EVT_FORK;
		e->tgid = ctgid;
		bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	}
	return 0;
}

/* A new program image: a target by name or by cgroup, or no longer one. */
SEC("tracepoint/sched/sched_process_exec")
int mm_exec(struct trace_event_raw_sched_process_exec *ctx)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	__u64 cg = bpf_get_current_cgroup_id();
	struct mm_target t = {};
	char comm[MM_COMM_LEN] = {};
	__u32 *gw;

	bpf_get_current_comm(comm, sizeof(comm));
	if ((gw = bpf_map_lookup_elem(&mm_target_cgroups, &cg))) {
		/* a pod's cgroup names its Gateway: it wins over a name */
		t.source = MM_TGT_CGROUP;
		t.gw = *gw;
	} else if (bpf_map_lookup_elem(&mm_target_comms, comm)) {
		t.source = MM_TGT_COMM;
	}
	if (t.source) {
		if (bpf_map_update_elem(&mm_targets, &tgid, &t, BPF_ANY))
			stat_inc(MM_STAT_TARGETS_FULL);
		target_bit_set(tgid, true);
		return 0;
	}
	/* a forked worker that execs something else is no longer the proxy */
	{
		struct mm_target *old = bpf_map_lookup_elem(&mm_targets, &tgid);

		if (old && old->source != MM_TGT_PID) {
			bpf_map_delete_elem(&mm_targets, &tgid);
			target_bit_set(tgid, false);
		}
	}
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int mm_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;

	if (tid == tgid && is_target(tgid)) {
		bpf_map_delete_elem(&mm_targets, &tgid);
		target_bit_set(tgid, false);
	}
	thread_link_drop(tid);
	return 0;
}
