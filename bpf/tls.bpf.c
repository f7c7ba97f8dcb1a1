// SPDX-License-Identifier: GPL-2.0-only
/*
 * TLS capture (feature gate TLSCapture): the plaintext of the proxy's TLS
 * connections, from uprobes on OpenSSL's SSL_read/SSL_write (+_ex), fed to
 * the same HTTP/1.x parser and attribution as plaintext sockets. A separate
 * object: the agent loads it when the gate turns on and destroys it when the
 * gate turns off, so nothing of it stays attached, loaded or pinned. Every
 * map of milometer.bpf.c it names (events, stats, routes, targets, thread
 * links) is the main object's own map, reused by fd at load.
 *
 * Which connection a call reads or writes is named by the kernel, never by
 * OpenSSL's structs (their layout differs between 3.0, 3.2 and BoringSSL):
 * the socket I/O made inside SSL_* on the same thread names the socket
 * (the method Pixie and Coroot use), remembered per SSL pointer for calls
 * served from OpenSSL's buffer without a syscall. SSL_do_handshake is hooked
 * for the same reason: the handshake's reads bind a fresh (possibly reused)
 * SSL pointer before its first SSL_read, which may need no syscall. Bytes
 * count at return (a non-blocking SSL_write retried is one write).
 *
 * The plaintext state of a connection lives in a hash by socket address
 * (uprobes are not tracing programs: socket storage is out of reach),
 * separate from the ciphertext stream's state in the main object, and is
 * freed at tcp_destroy_sock. Minimum kernel: as the main object's mode
 * (socket tracepoints 6.3+, sys_exit 5.17+) plus uprobes.
 */
/*
 * One parser step per callback: the return probes walk the capture path
 * from a uprobe's context, which costs the verifier ~50 % more per step
 * than the socket hooks (two steps: 772k processed instructions of the 1M
 * limit on 6.18, one: 467k); TLS I/O is a fraction of a proxy's.
 */
#define MM_BLOCK 1

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "bpf/milometer.h"
#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"

/* Plaintext HTTP state of a TLS connection, by socket address. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, 16384);
	__type(key, __u64);
	__type(value, struct mm_conn);
} mm_tls_conns SEC(".maps");
#ifdef MM_BOUNDED_LOOPS
/* the parser loops' bodies find their connection here (compat.bpf.h) */
#define MM_BL_CONNS mm_tls_conns
#endif

#include "bpf/http_parse.bpf.h"
#include "bpf/route_lookup.bpf.h"
#include "bpf/exchange.bpf.h"
#include "bpf/capture.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define MM_EEXIST 17 /* asm-generic/errno-base.h: vmlinux.h has no macros */

/* The main object's capture mode: the same socket hook finds the socket. */
const volatile __u32 mm_capture_mode = MM_CAPTURE_SOCK_TP;

/*
 * Set by the agent (.bss, at run time) once a Go program is hooked: only
 * then do the socket hooks look for goroutine calls.
 */
volatile __u32 mm_go_targets;

enum mm_tls_fn {
	MM_TLS_READ = 1,  /* SSL_read: int ret = bytes */
	MM_TLS_WRITE,     /* SSL_write */
	MM_TLS_READ_EX,   /* SSL_read_ex: ret 1, *readbytes = bytes */
	MM_TLS_WRITE_EX,  /* SSL_write_ex: ret 1, *written = bytes */
	MM_TLS_HANDSHAKE, /* SSL_do_handshake: binds ssl -> socket only */
};

/* The SSL_* call a thread is inside (one at a time; the newest wins). */
struct mm_tls_call {
	__u64 ssl;
	__u64 buf;
	__u64 outlen;  /* size_t * of the _ex functions */
	__u64 sk;      /* socket of the first socket I/O inside the call */
	__u64 conn_id; /* sk's plaintext connection then (0: none) */
	__u32 fn;      /* enum mm_tls_fn, 0: no call in flight */
	__u32 _pad;
};

/* What an SSL pointer is bound to. */
struct mm_tls_sock {
	__u64 sk;
	__u64 conn_id;
};

struct mm_tls_ssl_key {
	__u64 ssl;
	__u32 tgid;
	__u32 _pad;
};

/* The thread's SSL_* call in flight, in the thread's storage. */
#ifndef MM_BOUNDED_LOOPS
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct mm_tls_call);
} mm_tls_calls SEC(".maps");

static __always_inline struct mm_tls_call *tls_call(bool create)
{
	return bpf_task_storage_get(
		&mm_tls_calls, bpf_get_current_task_btf(), 0,
		create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
}

/* the registers the syscall saved, for a hook given none */
#define SYSCALL_REGS(tp_regs)                                                  \
	((struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf()))
#else
/* before task storage (5.11): by thread id; a call ends with fn = 0 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct mm_tls_call);
} mm_tls_calls SEC(".maps");

static __always_inline struct mm_tls_call *tls_call(bool create)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct mm_tls_call *c = bpf_map_lookup_elem(&mm_tls_calls, &tid);
	struct mm_tls_call zero = {};

	if (c || !create)
		return c;
	bpf_map_update_elem(&mm_tls_calls, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&mm_tls_calls, &tid);
}

/* before bpf_task_pt_regs (5.15): the ones sys_exit hands over */
#define SYSCALL_REGS(tp_regs) (tp_regs)
#endif

/* SSL pointer (per process) -> socket address, for calls without a syscall. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, struct mm_tls_ssl_key);
	__type(value, struct mm_tls_sock);
} mm_tls_ssl SEC(".maps");

static __always_inline int call_enter(struct pt_regs *ctx, __u32 fn)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mm_tls_call *call;

	if (!is_target(tgid))
		return 0;
	call = tls_call(true);
	if (!call) {
		stat_inc(MM_STAT_TLS_CALL_LOST);
		return 0;
	}
	call->fn = fn;
	call->ssl = PT_REGS_PARM1(ctx);
	call->buf = PT_REGS_PARM2(ctx);
	call->outlen = PT_REGS_PARM4(ctx);
	call->sk = 0;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(mm_ssl_read_enter)
{
	return call_enter(ctx, MM_TLS_READ);
}

SEC("uprobe")
int BPF_KPROBE(mm_ssl_write_enter)
{
	return call_enter(ctx, MM_TLS_WRITE);
}

SEC("uprobe")
int BPF_KPROBE(mm_ssl_read_ex_enter)
{
	return call_enter(ctx, MM_TLS_READ_EX);
}

SEC("uprobe")
int BPF_KPROBE(mm_ssl_write_ex_enter)
{
	return call_enter(ctx, MM_TLS_WRITE_EX);
}

SEC("uprobe")
int BPF_KPROBE(mm_ssl_handshake_enter)
{
	return call_enter(ctx, MM_TLS_HANDSHAKE);
}

/* SSL_free: the pointer may come back for another connection. */
SEC("uprobe")
int BPF_KPROBE(mm_ssl_free_enter, void *ssl)
{
	struct mm_tls_ssl_key k = {
		.ssl = (__u64)ssl,
		.tgid = bpf_get_current_pid_tgid() >> 32,
	};

	if (is_target(k.tgid))
		bpf_map_delete_elem(&mm_tls_ssl, &k);
	return 0;
}

/* The mm_tls_conns entry under construction (too big for the stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_conn);
} mm_tls_newconn SEC(".maps");

/*
 * The plaintext stream's role is the ciphertext stream's (a TLS client
 * always speaks first, so that one is right), not its own first I/O: an
 * HTTP/2 server writes its SETTINGS before it reads the client's preface.
 *
 * The entry is inserted whole: Caddy's first write (SETTINGS) and its
 * preface read run in two goroutines, on two CPUs at once. Inserted zeroed
 * and then given its role, a stalled vCPU let the write see role 0, take
 * the connection as a client's (its SETTINGS then parsed as a garbage
 * request) and the preface was never recognised: a stream lost without a
 * counter (test_tls_capture_go in CI, reproduced with a delay injected
 * here). The template is written only by the socket and sys_exit
 * tracepoints, which run with preemption off and never in an interrupt, so
 * nothing else on this CPU writes it between these stores and the insert.
 */
static __always_inline __u64 tls_conn_create(__u64 sk, __u32 tgid, __u8 role,
					     __u8 lazy)
{
	struct mm_conn *c = bpf_map_lookup_elem(&mm_tls_conns, &sk);
	__u32 zero = 0;
	struct mm_conn *n;
	__u16 sport = 0;
	int scope;
	long err;

	if (c)
		return c->conn_id;
	n = bpf_map_lookup_elem(&mm_tls_newconn, &zero);
	if (!n)
		return 0;
	n->conn_id = new_conn_id();
	n->tgid = tgid;
	/*
	 * The port, not sk: sk came from a BTF socket argument, and the
	 * verifier keeps it a trusted socket pointer, which a global
	 * function's scalar argument refuses ("R2 is not a scalar").
	 */
	if (role != MM_ROLE_UP)
		bpf_probe_read_kernel(
			&sport, sizeof(sport),
			&((struct sock *)sk)->__sk_common.skc_num);
	scope = mm_conn_scope(tgid, 0, sport);
	n->gw = scope & 0xff;
	n->lport = (scope >> 8) & 0xffff;
	n->role = role;
	/* a stream that starts inside a message is picked up at its next turn */
	n->lazy = lazy;
	err = bpf_map_update_elem(&mm_tls_conns, &sk, n, BPF_NOEXIST);
	if (err == -MM_EEXIST) { /* another CPU created it first */
		c = bpf_map_lookup_elem(&mm_tls_conns, &sk);
		return c ? c->conn_id : 0;
	}
	stat_inc(err ? MM_STAT_CONN_MAP_FULL : MM_STAT_CONNS_OPENED);
	return err ? 0 : n->conn_id;
}

/*
 * A call returned RET (n bytes for read/write, 1 for the _ex functions with
 * the count behind outlen): bind its SSL pointer (or Go connection) to the
 * socket its syscall named, and parse what it moved.
 *
 * The connection is only looked up here: bind_call() created it at the
 * socket's own I/O. Go's Write can return after tcp_destroy_sock freed the
 * entry (1-3 % of HTTP/2 connections under load, the one carrying the final
 * DATA frame); created here, an entry keyed by the dead socket was never
 * freed. The entry found must also be the one bound: the freed socket's
 * memory may already hold the next accepted connection, whose handshake
 * made its own entry at the same address.
 */
static __always_inline int call_done(struct mm_tls_call *call, __u32 tgid,
				     long ret)
{
	struct mm_io_args a = { .kind = MM_IO_BUF };
	struct mm_tls_ssl_key k = { .tgid = tgid };
	struct mm_tls_sock bound = {};
	struct mm_tls_sock *cached;
	struct mm_conn *c;
	__u32 fn = call->fn;
	__u64 n = 0;

	call->fn = 0;
	k.ssl = call->ssl;
	if (call->sk) {
		bound.sk = call->sk;
		bound.conn_id = call->conn_id;
		bpf_map_update_elem(&mm_tls_ssl, &k, &bound, BPF_ANY);
	} else {
		cached = bpf_map_lookup_elem(&mm_tls_ssl, &k);
		if (cached)
			bound = *cached;
	}
	if (fn == MM_TLS_HANDSHAKE)
		return 0;
	if (fn == MM_TLS_READ_EX || fn == MM_TLS_WRITE_EX) {
		if (ret == 1 && call->outlen)
			bpf_probe_read_user(&n, sizeof(n),
					    (void *)call->outlen);
	} else if (ret > 0) {
		n = ret;
	}
	if (!n || n > 0x7fffffff)
		return 0;
	if (!bound.sk) {
		/* bytes of a connection we cannot name (h2o's memory BIO) */
		stat_inc(MM_STAT_TLS_NO_SOCKET);
		return 0;
	}
	c = bpf_map_lookup_elem(&mm_tls_conns, &bound.sk);
	if (!c || c->conn_id != bound.conn_id) {
		stat_inc(MM_STAT_TLS_NO_CONN);
		return 0;
	}
	if (c->finished)
		return 0;
	stat_inc(MM_STAT_TLS_IO);
	a.buf = call->buf;
	/*
	 * Its ciphertext's socket: write_seq orders a held response the same,
	 * and the bounded build's loop bodies look c up again by this key.
	 */
	capture_io(c, &a, bound.sk, n,
		   fn == MM_TLS_READ || fn == MM_TLS_READ_EX);
	return 0;
}

/* Return of SSL_*: a uretprobe, or a uprobe on the jump before the RET. */
SEC("uretprobe")
int BPF_KRETPROBE(mm_ssl_ret, int ret)
{
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct mm_tls_call *call;

	if (!is_target(tgid))
		return 0;
	call = tls_call(false);
	if (!call || !call->fn)
		return 0;
	return call_done(call, tgid, ret);
}

/*
 * Go's crypto/tls: (*Conn).Read and (*Conn).Write. Register ABI (Go >=
 * 1.17, bpf/arch.bpf.h): receiver in the first integer register (rax,
 * R0), the slice's pointer in the second (rbx, R1); n returns in the
 * first; the current goroutine g is in r14 (R28 on arm64). A goroutine
 * that blocks in Read may resume on another thread, so the call is kept
 * per goroutine, not per thread; the socket syscall it makes (on whatever
 * thread) names the socket by the same g. Entry on the function's first
 * jump (after the stack check), return on each RET: never uretprobes on Go
 * (they break its stack moves). The handshake (handshakeContext) binds a
 * connection as SSL_do_handshake does.
 */
/* per goroutine and function: Read and Write call handshakeContext inside */
struct mm_go_key {
	__u64 g;
	__u32 tgid;
	__u32 fn; /* enum mm_tls_fn */
};

/*
 * Go crypto/tls calls in flight, per goroutine (LRU: a goroutine that never
 * returns, blocked at exit or unwound by a panic, does not fill it).
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, struct mm_go_key);
	__type(value, struct mm_tls_call);
} mm_tls_gocalls SEC(".maps");

static __always_inline int go_enter(struct pt_regs *ctx, __u32 fn)
{
	struct mm_go_key k = {
		.g = MM_GO_G(ctx),
		.tgid = bpf_get_current_pid_tgid() >> 32,
		.fn = fn,
	};
	struct mm_tls_call call = {
		.fn = fn,
		.ssl = MM_GO_ARG1(ctx),
		.buf = MM_GO_ARG2(ctx),
	};

	if (!is_target(k.tgid))
		return 0;
	bpf_map_update_elem(&mm_tls_gocalls, &k, &call, BPF_ANY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(mm_go_read_enter)
{
	return go_enter(ctx, MM_TLS_READ);
}

SEC("uprobe")
int BPF_KPROBE(mm_go_write_enter)
{
	return go_enter(ctx, MM_TLS_WRITE);
}

/*
 * net/http runs the handshake before its first Read: a request that came
 * with the client's Finished is then read from crypto/tls's buffer without
 * a syscall, so the connection must be bound here.
 */
SEC("uprobe")
int BPF_KPROBE(mm_go_handshake_enter)
{
	return go_enter(ctx, MM_TLS_HANDSHAKE);
}

static __always_inline int go_ret(struct pt_regs *ctx, __u32 fn)
{
	struct mm_go_key k = {
		.g = MM_GO_G(ctx),
		.tgid = bpf_get_current_pid_tgid() >> 32,
		.fn = fn,
	};
	struct mm_tls_call *call;

	if (!is_target(k.tgid))
		return 0;
	call = bpf_map_lookup_elem(&mm_tls_gocalls, &k);
	if (!call || !call->fn) {
		/*
		 * Bytes moved by a call whose entry is gone (evicted from the
		 * LRU by more goroutines in Read than it holds) or was never
		 * seen: not followed, and counted. Their connection is unknown
		 * here; a response whose request was not seen has no pending
		 * request to be paired with and is dropped by the parser.
		 */
		if (fn != MM_TLS_HANDSHAKE && (long)MM_GO_RET1(ctx) > 0)
			stat_inc(MM_STAT_TLS_CALL_LOST);
		return 0;
	}
	call_done(call, k.tgid, (long)MM_GO_RET1(ctx));
	bpf_map_delete_elem(&mm_tls_gocalls, &k);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(mm_go_read_ret)
{
	return go_ret(ctx, MM_TLS_READ);
}

SEC("uprobe")
int BPF_KPROBE(mm_go_write_ret)
{
	return go_ret(ctx, MM_TLS_WRITE);
}

SEC("uprobe")
int BPF_KPROBE(mm_go_handshake_ret)
{
	return go_ret(ctx, MM_TLS_HANDSHAKE);
}

/* The thread's SSL_* call in flight that has not named its socket yet. */
static __always_inline struct mm_tls_call *unbound_call(void)
{
	struct mm_tls_call *call;

	if (!is_target(bpf_get_current_pid_tgid() >> 32))
		return NULL;
	call = tls_call(false);
	return call && call->fn && !call->sk ? call : NULL;
}

/*
 * A Go crypto/tls call of the goroutine that made this syscall: g at the
 * syscall is the goroutine (Go's syscall stubs keep the register ABI).
 */
static __always_inline struct mm_tls_call *unbound_go_call(struct pt_regs *regs)
{
	struct mm_go_key k = { .tgid = bpf_get_current_pid_tgid() >> 32 };
	struct mm_tls_call *call;

	k.g = MM_GO_G_CORE(regs);
	/* the innermost call first: a handshake inside Read or Write */
	k.fn = MM_TLS_HANDSHAKE;
	call = bpf_map_lookup_elem(&mm_tls_gocalls, &k);
	if (!call) {
		k.fn = MM_TLS_READ;
		call = bpf_map_lookup_elem(&mm_tls_gocalls, &k);
	}
	if (!call) {
		k.fn = MM_TLS_WRITE;
		call = bpf_map_lookup_elem(&mm_tls_gocalls, &k);
	}
	return call && call->fn && !call->sk ? call : NULL;
}

/*
 * The call's socket, named by its first socket I/O, and the plaintext
 * connection of that socket, created here while the socket is alive (see
 * call_done()). Its role is the ciphertext stream's (ct: that socket's
 * state in the main object). Created by a handshake, the stream is seen
 * from its start; by a read or write, the connection was found open.
 */
static __always_inline void bind_call(struct mm_tls_call *call, __u64 sk,
				      const struct mm_conn *ct)
{
	call->sk = sk;
	call->conn_id = tls_conn_create(sk, bpf_get_current_pid_tgid() >> 32,
					ct ? ct->role : MM_ROLE_UNKNOWN,
					call->fn != MM_TLS_HANDSHAKE);
}

static __always_inline void note_sk(struct sock *sk)
{
	struct mm_tls_call *call = unbound_call();

	if (!call && mm_go_targets &&
	    is_target(bpf_get_current_pid_tgid() >> 32))
		call = unbound_go_call(SYSCALL_REGS(NULL));
	if (!call ||
	    !is_tcp(sk->__sk_common.skc_family, sk->sk_type, sk->sk_protocol))
		return;
	bind_call(call, (__u64)sk, bpf_sk_storage_get(&mm_sk_conns, sk, 0, 0));
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(mm_tls_sock_recv, struct sock *sk, int ret, int flags)
{
	if (mm_capture_mode == MM_CAPTURE_SOCK_TP && ret > 0)
		note_sk(sk);
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(mm_tls_sock_send, struct sock *sk, int ret, int flags)
{
	if (mm_capture_mode == MM_CAPTURE_SOCK_TP && ret > 0)
		note_sk(sk);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(mm_tls_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 sk;

	if (mm_capture_mode != MM_CAPTURE_SYS_EXIT || ret <= 0 ||
	    io_kind(MM_SYSCALL_NR(regs)) == MM_IO_NONE ||
	    !is_target(bpf_get_current_pid_tgid() >> 32))
		return 0;
	sk = sock_of_fd(MM_SYSCALL_ARG1(regs));
	if (sk) {
		struct mm_tls_call *call = unbound_call();

		if (!call && mm_go_targets)
			call = unbound_go_call(SYSCALL_REGS(regs));
		struct sock *so = (struct sock *)sk;

		if (!call || !is_tcp(BPF_CORE_READ(so, __sk_common.skc_family),
				     BPF_CORE_READ(so, sk_type),
				     BPF_CORE_READ(so, sk_protocol)))
			return 0;
		bind_call(call, sk, bpf_map_lookup_elem(&mm_conns, &sk));
	}
	return 0;
}

/* FIN_WAIT1 / LAST_ACK: the proxy closed; what is pending was aborted. */
SEC("tp_btf/inet_sock_set_state")
int BPF_PROG(mm_tls_tcp_state, struct sock *sk, int oldstate, int newstate)
{
	__u64 key = (__u64)sk;
	struct mm_conn *c;

	if (newstate != TCP_FIN_WAIT1_ && newstate != TCP_LAST_ACK_)
		return 0;
	c = bpf_map_lookup_elem(&mm_tls_conns, &key);
	if (c)
		conn_finish(c, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(mm_tls_tcp_destroy, struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct mm_conn *c = bpf_map_lookup_elem(&mm_tls_conns, &key);

	if (!c)
		return 0;
	conn_finish(c, bpf_ktime_get_ns());
	bpf_map_delete_elem(&mm_tls_conns, &key);
	return 0;
}
