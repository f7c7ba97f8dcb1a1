// SPDX-License-Identifier: GPL-2.0-only
/*
 * milometer data path: HTTP/1.x exchanges of the gateway proxy, seen from
 * syscall tracepoints only (no kprobes, no fentry), parsed and attributed to
 * (HTTPRoute, rule) in the kernel, one ring-buffer event per exchange.
 *
 * Hooks: sys_enter/sys_exit of read, readv, recvfrom, recvmsg, write,
 * writev, sendto, sendmsg, sendfile64, accept, accept4, connect, and
 * sys_enter_close; sched_process_fork/exec/exit keep the target set.
 * Every hook first checks the process is a target (or that it saved args),
 * so the rest of the node pays one hash lookup per hooked syscall.
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

char LICENSE[] SEC("license") = "GPL";

#define S_IFMT 00170000
#define S_IFSOCK 0140000

static __always_inline bool is_target(__u32 tgid)
{
	return bpf_map_lookup_elem(&mm_targets, &tgid) != NULL;
}

static __always_inline void save_args(int fd, __u64 buf, __u32 io, __u64 cnt)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mm_args *a;

	if (fd < 0 || !is_target(id >> 32))
		return;
	a = bpf_task_storage_get(&mm_args, bpf_get_current_task_btf(), 0,
				 BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!a)
		return;
	a->buf = buf;
	a->fd = fd;
	a->io = io;
	a->cnt = cnt;
}

/* The args saved at enter, consumed: NULL when this thread saved none. */
static __always_inline struct mm_args *take_args(struct mm_args *copy)
{
	struct mm_args *a = bpf_task_storage_get(&mm_args,
						 bpf_get_current_task_btf(), 0, 0);

	if (!a || !a->io)
		return NULL;
	*copy = *a;
	a->io = 0;
	return copy;
}

/* Only sockets are parsed: files and pipes a proxy reads are not HTTP. */
static __always_inline bool fd_is_socket(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file **fdarr;
	struct file *f;
	unsigned int max;
	umode_t mode;

	max = BPF_CORE_READ(task, files, fdt, max_fds);
	if ((unsigned int)fd >= max)
		return false;
	fdarr = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdarr[fd]) || !f)
		return false;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	return (mode & S_IFMT) == S_IFSOCK;
}

static __always_inline __u64 new_conn_id(void)
{
	__u32 zero = 0;
	__u64 *ctr = bpf_map_lookup_elem(&mm_conn_ids, &zero);

	if (!ctr)
		return 0;
	*ctr += 1;
	return ((__u64)bpf_get_smp_processor_id() << 48) | *ctr;
}

/* A zeroed mm_conn to create entries from (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mm_conn);
} mm_conn_zero SEC(".maps");

static struct mm_conn *conn_create(struct mm_conn_key *key, __u8 role)
{
	__u32 zero = 0;
	struct mm_conn *init = bpf_map_lookup_elem(&mm_conn_zero, &zero);
	struct mm_conn *c;

	if (!init)
		return NULL;
	/* accept() on a reused fd replaces whatever the old socket left */
	if (bpf_map_update_elem(&mm_conns, key, init, BPF_ANY)) {
		stat_inc(MM_STAT_CONN_MAP_FULL);
		return NULL;
	}
	c = bpf_map_lookup_elem(&mm_conns, key);
	if (c) {
		c->conn_id = new_conn_id();
		c->role = role;
	}
	return c;
}

/* The window loop: parse or skip one step of a user buffer per iteration. */
struct mm_wctx {
	struct mm_conn *c;
	struct mm_parser *p;
	struct mm_scratch *s;
	__u64 ubuf;
	__u64 now;
	__u32 len;
	__u32 off;
	__u8 is_req;
};

static __always_inline void account(struct mm_wctx *w, __u32 n)
{
	struct mm_pending *s;

	if (!w->is_req) {
		w->c->resp_bytes += n;
		return;
	}
	s = w->c->untracked ? NULL : newest_slot(w->c);
	if (s)
		s->req_bytes += n;
}

static long window_step(__u32 i, void *ctx)
{
	struct mm_wctx *w = ctx;
	struct mm_parser *p = w->p;
	struct mm_conn *c = w->c;
	struct mm_bctx b;
	__u32 left, n;
	__u8 st;

	if (w->off >= w->len)
		return 1;
	left = w->len - w->off;
	st = p->state;
	if (st == PS_OPAQUE)
		return 1;
	if (st == PS_BODY || st == PS_CDATA || st == PS_CLOSE_BODY) {
		n = left;
		if (st != PS_CLOSE_BODY && p->rem < n)
			n = p->rem;
		w->off += n;
		account(w, n);
		if (st == PS_CLOSE_BODY)
			return 0;
		p->rem -= n;
		if (p->rem)
			return 0;
		if (st == PS_CDATA) {
			p->state = PS_CDATA_END;
		} else {
			p->state = PS_START;
			if (!w->is_req)
				response_done(c, w->now, 0);
		}
		return 0;
	}

	n = left > MM_SCRATCH ? MM_SCRATCH : left;
	if (bpf_probe_read_user(w->s->buf, n & (MM_SCRATCH - 1) ?: MM_SCRATCH,
				(void *)(w->ubuf + w->off))) {
		/* unreadable user memory: drop the stream's sync, loudly */
		p->state = PS_OPAQUE;
		stat_inc(MM_STAT_UNPARSED);
		return 1;
	}
	b.c = c;
	b.p = p;
	b.s = w->s;
	b.now = w->now;
	b.n = n;
	b.pos = 0;
	b.used = n;
	b.is_req = w->is_req;
	b.ev = BEV_NONE;
	/* each callback advances by at least one byte: n calls at most */
	bpf_loop(n, parse_block, &b, 0);
	if (b.used > n)
		b.used = n;
	w->off += b.used;
	account(w, b.used);
	switch (b.ev) {
	case BEV_HEAD_END:
		if (w->is_req)
			request_head_done(c, p);
		else
			response_head_done(c, p, w->now);
		break;
	case BEV_MSG_END:
		if (!w->is_req)
			response_done(c, w->now, 0);
		break;
	case BEV_GARBAGE:
		if (w->is_req)
			request_garbage(c);
		/* a pre-existing socket may never have been HTTP (nginx's
		 * master/worker channel is a socketpair) */
		stat_inc(c->lazy ? MM_STAT_NOT_HTTP : MM_STAT_UNPARSED);
		return 1;
	}
	return 0;
}

static __always_inline void parse_buf(struct mm_conn *c, struct mm_parser *p,
				      struct mm_scratch *s, __u64 ubuf,
				      __u32 len, bool is_req, __u64 now)
{
	struct mm_wctx w = {
		.c = c, .p = p, .s = s, .ubuf = ubuf, .now = now, .len = len,
		.is_req = is_req,
	};

	bpf_loop(MM_WINDOWS, window_step, &w, 0);
	if (w.off < w.len && p->state != PS_OPAQUE) {
		/* more events in one syscall than MM_WINDOWS: resync is unsafe */
		p->state = PS_OPAQUE;
		stat_inc(MM_STAT_SCAN_LIMIT);
	}
}

struct mm_iovctx {
	struct mm_conn *c;
	struct mm_parser *p;
	struct mm_scratch *s;
	__u64 iov;
	__u64 now;
	__u64 left;
	__u8 is_req;
};

static long iov_step(__u32 i, void *ctx)
{
	struct mm_iovctx *x = ctx;
	struct iovec v;
	__u64 n;

	if (!x->left)
		return 1;
	if (bpf_probe_read_user(&v, sizeof(v),
				(void *)(x->iov + i * sizeof(struct iovec))))
		return 1;
	n = v.iov_len < x->left ? v.iov_len : x->left;
	x->left -= n;
	if (n)
		parse_buf(x->c, x->p, x->s, (__u64)v.iov_base, n, x->is_req,
			  x->now);
	return 0;
}

static __always_inline void handle_io(__u64 id, struct mm_args *a, long ret)
{
	struct mm_conn_key key = { .tgid = id >> 32, .fd = a->fd };
	bool is_read = a->io <= MM_IO_RECVMSG;
	struct mm_scratch *s;
	struct mm_parser *p;
	struct mm_conn *c;
	__u32 zero = 0;
	__u64 now = bpf_ktime_get_ns();
	bool is_req;

	c = bpf_map_lookup_elem(&mm_conns, &key);
	if (ret <= 0) {
		/* EOF from a backend ends a close-delimited response */
		if (ret == 0 && is_read && c && c->role == MM_ROLE_UP &&
		    c->resp.state == PS_CLOSE_BODY) {
			response_done(c, c->last_resp_ns, MM_EV_CLOSE_DELIM);
			c->resp.state = PS_START;
		}
		return;
	}
	if (!c) {
		if (!fd_is_socket(a->fd))
			return;
		/* seen first mid-stream (agent started later): role by direction */
		c = conn_create(&key, is_read ? MM_ROLE_DOWN : MM_ROLE_UP);
		if (!c)
			return;
		c->lazy = 1;
	}
	if (c->role == MM_ROLE_UNKNOWN)
		c->role = is_read ? MM_ROLE_DOWN : MM_ROLE_UP;
	is_req = (c->role == MM_ROLE_DOWN) == is_read;
	p = is_req ? &c->req : &c->resp;
	if (!is_req)
		c->last_resp_ns = now;
	if (p->state == PS_OPAQUE)
		return;
	s = bpf_map_lookup_elem(&mm_scratch, &zero);
	if (!s)
		return;

	switch (a->io) {
	case MM_IO_READ:
	case MM_IO_WRITE:
		parse_buf(c, p, s, a->buf, ret, is_req, now);
		break;
	case MM_IO_SENDFILE: {
		/* file bytes are body bytes: counted, never parsed */
		__u32 st = p->state;

		if (st == PS_BODY || st == PS_CDATA || st == PS_CLOSE_BODY) {
			struct mm_wctx w = {
				.c = c, .p = p, .s = s, .now = now, .len = ret,
				.is_req = is_req,
			};

			window_step(0, &w);
		} else if (!is_req) {
			c->resp_bytes += ret;
		}
		break;
	}
	case MM_IO_READV:
	case MM_IO_WRITEV:
	case MM_IO_RECVMSG:
	case MM_IO_SENDMSG: {
		struct mm_iovctx x = {
			.c = c, .p = p, .s = s, .now = now, .left = ret,
			.is_req = is_req, .iov = a->buf,
		};
		__u64 cnt = a->cnt;

		if (a->io == MM_IO_RECVMSG || a->io == MM_IO_SENDMSG) {
			struct user_msghdr m;

			if (bpf_probe_read_user(&m, sizeof(m), (void *)a->buf))
				return;
			x.iov = (__u64)m.msg_iov;
			cnt = m.msg_iovlen;
		}
		if (cnt > MM_IOV_MAX) {
			stat_inc(MM_STAT_IOV_LIMIT);
			cnt = MM_IOV_MAX;
		}
		bpf_loop(cnt, iov_step, &x, 0);
		if (x.left && p->state != PS_OPAQUE) {
			p->state = PS_OPAQUE;
			stat_inc(MM_STAT_IOV_LIMIT);
		}
		break;
	}
	}
}

static __always_inline int exit_io(long ret)
{
	struct mm_args copy, *a = take_args(&copy);

	if (!a)
		return 0;
	handle_io(bpf_get_current_pid_tgid(), a, ret);
	return 0;
}

/*
 * The HTTP parser lives in one program, mm_io_exit, that every data
 * syscall's exit tail-calls: the verifier checks it once instead of once per
 * hook (8 copies took 18 s to load), and the exit hooks of other processes
 * stay a single task-storage lookup.
 */
SEC("tracepoint")
int mm_io_exit(struct trace_event_raw_sys_exit *ctx)
{
	return exit_io(ctx->ret);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	/* sizes, not BTF types: the kernel takes no BTF for prog arrays */
	__uint(key_size, sizeof(__u32));
	__array(values, int(void *));
} mm_progs SEC(".maps") = {
	.values = { [0] = (void *)&mm_io_exit },
};

static __always_inline int exit_data(struct trace_event_raw_sys_exit *ctx)
{
	struct mm_args *a = bpf_task_storage_get(&mm_args,
						 bpf_get_current_task_btf(), 0, 0);

	if (a && a->io)
		bpf_tail_call(ctx, &mm_progs, 0);
	return 0;
}

#define ENTER_BUF(name, io)                                                   \
	SEC("tracepoint/syscalls/sys_enter_" #name)                           \
	int mm_enter_##name(struct trace_event_raw_sys_enter *ctx)            \
	{                                                                     \
		save_args(ctx->args[0], ctx->args[1], io, ctx->args[2]);      \
		return 0;                                                     \
	}                                                                     \
	SEC("tracepoint/syscalls/sys_exit_" #name)                            \
	int mm_exit_##name(struct trace_event_raw_sys_exit *ctx)              \
	{                                                                     \
		return exit_data(ctx);                                        \
	}

#define EXIT_BUF(name)                                                        \
	SEC("tracepoint/syscalls/sys_exit_" #name)                            \
	int mm_exit_##name(struct trace_event_raw_sys_exit *ctx)              \
	{                                                                     \
		return exit_data(ctx);                                        \
	}

#define MSG_PEEK_ 0x2

ENTER_BUF(read, MM_IO_READ)
ENTER_BUF(readv, MM_IO_READV)

/*
 * recv(MSG_PEEK) leaves the bytes in the socket: nginx peeks to test idle
 * keep-alive connections, and parsing peeked bytes would read them twice.
 */
SEC("tracepoint/syscalls/sys_enter_recvfrom")
int mm_enter_recvfrom(struct trace_event_raw_sys_enter *ctx)
{
	if (!(ctx->args[3] & MSG_PEEK_))
		save_args(ctx->args[0], ctx->args[1], MM_IO_READ, 0);
	return 0;
}
EXIT_BUF(recvfrom)

SEC("tracepoint/syscalls/sys_enter_recvmsg")
int mm_enter_recvmsg(struct trace_event_raw_sys_enter *ctx)
{
	if (!(ctx->args[2] & MSG_PEEK_))
		save_args(ctx->args[0], ctx->args[1], MM_IO_RECVMSG, 0);
	return 0;
}
EXIT_BUF(recvmsg)
ENTER_BUF(write, MM_IO_WRITE)
ENTER_BUF(sendto, MM_IO_WRITE)
ENTER_BUF(writev, MM_IO_WRITEV)
ENTER_BUF(sendmsg, MM_IO_SENDMSG)

SEC("tracepoint/syscalls/sys_enter_sendfile64")
int mm_enter_sendfile64(struct trace_event_raw_sys_enter *ctx)
{
	save_args(ctx->args[0], 0, MM_IO_SENDFILE, 0);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_sendfile64")
int mm_exit_sendfile64(struct trace_event_raw_sys_exit *ctx)
{
	return exit_data(ctx);
}

/* accept/accept4: the new fd is a downstream connection, fresh state. */
static __always_inline int enter_accept(void)
{
	save_args(0, 0, MM_IO_ACCEPT, 0);
	return 0;
}

static __always_inline int exit_accept(long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mm_args copy, *a = take_args(&copy);
	struct mm_conn_key key = { .tgid = id >> 32 };

	if (!a)
		return 0;
	if (ret < 0)
		return 0;
	key.fd = ret;
	conn_create(&key, MM_ROLE_DOWN);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_accept")
int mm_enter_accept(struct trace_event_raw_sys_enter *ctx)
{
	return enter_accept();
}

SEC("tracepoint/syscalls/sys_exit_accept")
int mm_exit_accept(struct trace_event_raw_sys_exit *ctx)
{
	return exit_accept(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_accept4")
int mm_enter_accept4(struct trace_event_raw_sys_enter *ctx)
{
	return enter_accept();
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int mm_exit_accept4(struct trace_event_raw_sys_exit *ctx)
{
	return exit_accept(ctx->ret);
}

SEC("tracepoint/syscalls/sys_enter_connect")
int mm_enter_connect(struct trace_event_raw_sys_enter *ctx)
{
	save_args(ctx->args[0], 0, MM_IO_CONNECT, 0);
	return 0;
}

/* connect: an upstream connection, bound to the request that opened it. */
SEC("tracepoint/syscalls/sys_exit_connect")
int mm_exit_connect(struct trace_event_raw_sys_exit *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mm_args copy, *a = take_args(&copy);
	struct mm_conn_key key = { .tgid = id >> 32 };
	struct mm_link *l;
	struct mm_conn *c;
	long ret = ctx->ret;

	if (!a)
		return 0;
	key.fd = a->fd;
	if (ret < 0 && ret != -115 /* EINPROGRESS */)
		return 0;
	c = conn_create(&key, MM_ROLE_UP);
	if (!c)
		return 0;
	l = bpf_task_storage_get(&mm_thread_req, bpf_get_current_task_btf(), 0,
				 0);
	if (l && l->valid) {
		c->bind = *l;
		c->bind_valid = 1;
	}
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_close")
int mm_enter_close(struct trace_event_raw_sys_enter *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	struct mm_conn_key key = { .tgid = id >> 32, .fd = ctx->args[0] };
	struct mm_conn *c;

	if (!is_target(key.tgid))
		return 0;
	c = bpf_map_lookup_elem(&mm_conns, &key);
	if (!c)
		return 0;
	conn_finish(c, bpf_ktime_get_ns());
	bpf_map_delete_elem(&mm_conns, &key);
	return 0;
}

/* Children of a traced process are traced: nginx reload forks new workers. */
SEC("raw_tp/sched_process_fork")
int BPF_PROG(mm_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ptgid = BPF_CORE_READ(parent, tgid);
	__u32 ctgid = BPF_CORE_READ(child, tgid);
	struct mm_target t = { .source = MM_TGT_FORK };

	if (ctgid == ptgid || !is_target(ptgid))
		return 0;
	bpf_map_update_elem(&mm_targets, &ctgid, &t, BPF_ANY);
	stat_inc(MM_STAT_FORKS);
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

	bpf_get_current_comm(comm, sizeof(comm));
	if (bpf_map_lookup_elem(&mm_target_comms, comm))
		t.source = MM_TGT_COMM;
	else if (bpf_map_lookup_elem(&mm_target_cgroups, &cg))
		t.source = MM_TGT_CGROUP;
	if (t.source) {
		bpf_map_update_elem(&mm_targets, &tgid, &t, BPF_ANY);
		return 0;
	}
	/* a forked worker that execs something else is no longer the proxy */
	{
		struct mm_target *old = bpf_map_lookup_elem(&mm_targets, &tgid);

		if (old && old->source != MM_TGT_PID)
			bpf_map_delete_elem(&mm_targets, &tgid);
	}
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int mm_exit(void *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)id, tgid = id >> 32;

	/* task storage (args, thread link) goes with the task itself */
	if (tid == tgid)
		bpf_map_delete_elem(&mm_targets, &tgid);
	return 0;
}
