/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * From "this socket moved RET bytes in this syscall" to parser steps: which
 * user memory holds the bytes (buffer, iovec array, msghdr), the window loop
 * over one buffer, the iovec loop, and what an I/O means for a connection
 * (which stream, first sight, EOF). Both capture modes (socket tracepoints,
 * sys_exit fallback) end here with the same arguments.
 */
#ifndef MM_CAPTURE_BPF_H
#define MM_CAPTURE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>

#include "bpf/arch.bpf.h"
#include "bpf/compat.bpf.h"
#include "bpf/conn.bpf.h"
#include "bpf/exchange.bpf.h"
#include "bpf/http_parse.bpf.h"
#include "bpf/maps.bpf.h"

#define AF_INET_     2
#define AF_INET6_    10
#define SOCK_STREAM_ 1
#define IPPROTO_TCP_ 6
#define MSG_PEEK_    0x2

#define S_IFMT_   00170000
#define S_IFSOCK_ 0140000

/* TCP states (include/net/tcp_states.h) */
#define TCP_ESTABLISHED_ 1
#define TCP_SYN_SENT_    2
#define TCP_SYN_RECV_    3
#define TCP_FIN_WAIT1_   4
#define TCP_LAST_ACK_    9

static __always_inline bool is_tcp(__u16 family, __u16 type, __u16 proto)
{
	return (family == AF_INET_ || family == AF_INET6_) &&
	       type == SOCK_STREAM_ && proto == IPPROTO_TCP_;
}

/* The struct sock behind fd in the current process, 0 if not a socket. */
static __always_inline __u64 sock_of_fd(__u32 fd)
{
	struct task_struct *task = mm_current_task();
	struct file **fdarr;
	struct socket *so;
	struct file *f;
	umode_t mode;

	if (fd >= BPF_CORE_READ(task, files, fdt, max_fds))
		return 0;
	fdarr = BPF_CORE_READ(task, files, fdt, fd);
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdarr[fd]) || !f)
		return 0;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & S_IFMT_) != S_IFSOCK_)
		return 0;
	so = BPF_CORE_READ(f, private_data);
	return (__u64)BPF_CORE_READ(so, sk);
}

/* Which user memory the syscall NR moved its bytes through. */
static __always_inline __u32 io_kind(__u64 nr)
{
	switch (nr) {
	case NR_read:
	case NR_write:
	case NR_recvfrom:
	case NR_sendto:
		return MM_IO_BUF;
	case NR_readv:
	case NR_writev:
		return MM_IO_IOV;
	case NR_recvmsg:
	case NR_sendmsg:
		return MM_IO_MSG;
	case NR_sendfile:
		return MM_IO_FILE;
	}
	/* io_uring, splice, recvmmsg/sendmmsg, kernel callers: no buffer */
	return MM_IO_NONE;
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

/*
 * Which Gateway's route table a new connection of process tgid uses (bits
 * 0-7), and for a socket sk the proxy accepted, which listener port
 * (bits 8-23): hash lookups, made only when the table has more than the
 * default slot, or listeners on several ports. The socket's local port is
 * sport, or read from sk (an address: a global function takes scalars
 * only) when sport is 0; both 0: not an accepted socket. A global
 * function, verified once on its own: inlined into every hook that
 * creates connections, its branches added 44 MiB to the
 * verifier's memory at load (charged to the agent's pod: test_mem_limit).
 */
__noinline int mm_conn_scope(__u32 tgid, __u64 sk, __u32 sport)
{
	__u32 zero = 0;
	struct mm_config *cfg = bpf_map_lookup_elem(&mm_config, &zero);
	struct mm_listener_key k = {};
	struct mm_target *t;
	__u16 num = sport;
	__u32 *lport;

	if (!cfg)
		return 0;
	if (cfg->flags & MM_CFG_GW_SLOTS) {
		t = bpf_map_lookup_elem(&mm_targets, &tgid);
		k.gw = t ? t->gw & 0xff : 0;
	}
	if ((!sk && !sport) || !(cfg->flags & MM_CFG_LISTENERS))
		return (int)k.gw;
	/* skc_num: the local port, host order (the listening port) */
	if (!num)
		bpf_probe_read_kernel(
			&num, sizeof(num),
			&((struct sock *)sk)->__sk_common.skc_num);
	k.sport = num;
	lport = bpf_map_lookup_elem(&mm_listeners, &k);
	return (int)(k.gw | (lport ? (*lport & 0xffff) << 8 : 0));
}

/*
 * A connection state fresh from its map: give it its identity. sk (an
 * address) or sport (its local port, when the hook has a BTF socket): the
 * socket, both 0 for one the proxy connected (an upstream leg).
 */
static __always_inline void conn_init(struct mm_conn *c, __u32 tgid, __u8 role,
				      __u64 sk, __u32 sport)
{
	int scope = role == MM_ROLE_UP ? mm_conn_scope(tgid, 0, 0)
				       : mm_conn_scope(tgid, sk, sport);

	c->conn_id = new_conn_id();
	c->tgid = tgid;
	c->gw = scope & 0xff;
	c->lport = (scope >> 8) & 0xffff;
	c->role = role;
	stat_inc(MM_STAT_CONNS_OPENED);
}

static __always_inline void account(struct mm_lctx *x, __u32 n)
{
	struct mm_conn *c = x->c;
	struct mm_pending *s;

	if (!x->s->is_req) {
		c->resp_bytes += n;
		return;
	}
	s = c->untracked ? NULL : pipe_newest(c);
	if (s)
		s->req_bytes += n;
}

/*
 * A TLS record header (RFC 8446 5.1: content type 20-23, legacy version
 * 3.x) where an HTTP message should start: the socket of an HTTPS listener
 * or backend. Its plaintext, if any, is TLSCapture's.
 */
static __always_inline bool tls_record_start(const struct mm_scratch *s)
{
	return s->b_n >= 3 && s->buf[0] >= 20 && s->buf[0] <= 23 &&
	       s->buf[1] == 3 && (__u8)s->buf[2] <= 4;
}

MM_LOOP_BODY(parse_block)

#ifdef MM_BOUNDED_LOOPS
/*
 * The window's events, each verified once as a global function: inlined in
 * the window step they took most of 5.10's 1M-instruction budget.
 */
__noinline int mm_request_head_done_g(void)
{
	struct mm_lctx x;

	if (mm_lctx_of_scratch(&x))
		request_head_done(&x);
	return 0;
}

__noinline int mm_response_head_done_g(void)
{
	struct mm_lctx x;

	if (mm_lctx_of_scratch(&x))
		response_head_done(x.c, x.p, x.s->now);
	return 0;
}

__noinline int mm_response_done_g(void)
{
	struct mm_lctx x;

	if (mm_lctx_of_scratch(&x))
		response_done(x.c, x.s->now, 0);
	return 0;
}

#define REQUEST_HEAD_DONE(x)          mm_request_head_done_g()
#define RESPONSE_HEAD_DONE(c, p, now) mm_response_head_done_g()
#define RESPONSE_DONE_NOW(c, now)     mm_response_done_g()
#else
#define REQUEST_HEAD_DONE(x)          request_head_done(x)
#define RESPONSE_HEAD_DONE(c, p, now) response_head_done((c), (p), (now))
#define RESPONSE_DONE_NOW(c, now)     response_done((c), (now), 0)
#endif

/* One step over the user buffer: skip body bytes, or parse a window. */
MM_LOOP_CB window_step(__u32 i, void *ctx)
{
	struct mm_lctx *x = ctx;
	struct mm_scratch *s = x->s;
	struct mm_parser *p = x->p;
	struct mm_conn *c = x->c;
	__u32 left, n, off = s->w_off, len = s->w_len;
	__u8 st;

	if (off >= len)
		return 1;
	left = len - off;
	st = p->state;
	if (st == PS_OPAQUE)
		return 1;
	if (st == PS_RESYNC) {
		s->w_off = len;
		return 1;
	}
	if (st == PS_BODY || st == PS_CDATA || st == PS_CLOSE_BODY) {
		n = left;
		if (st != PS_CLOSE_BODY && p->rem < n)
			n = p->rem;
		s->w_off = off + n;
		account(x, n);
		if (st == PS_CLOSE_BODY)
			return 1; /* the window is consumed */
		p->rem -= n;
		if (p->rem)
			return 1; /* likewise */
		if (st == PS_CDATA) {
			p->state = PS_CDATA_END;
		} else {
			p->state = PS_START;
			if (!s->is_req)
				RESPONSE_DONE_NOW(c, s->now);
		}
		return s->w_off >= len;
	}

	n = left > MM_SCRATCH ? MM_SCRATCH : left;
	if (bpf_probe_read_user(s->buf, n & (MM_SCRATCH - 1) ?: MM_SCRATCH,
				(void *)(s->w_ubuf + off))) {
		/* unreadable user memory: drop the stream's sync, loudly */
		p->state = PS_OPAQUE;
		stat_inc(MM_STAT_UNPARSED);
		return 1;
	}
	s->b_n = n;
	s->b_pos = 0;
	s->b_used = n;
	s->b_ev = BEV_NONE;
	/* each callback advances by at least one byte: n calls at most */
	MM_LOOP_G(MM_SCRATCH, n, parse_block, x);
	n = s->b_used;
	if (n > s->b_n)
		n = s->b_n;
	s->b_used = n;
	s->w_off = off + n;
	account(x, n);
	/* the next window overwrites buf: a head going on keeps its part */
	if (s->is_req && s->b_ev == BEV_NONE && p->state >= PS_METHOD &&
	    p->state <= PS_END_LF)
		head_save(x, n);
	switch (s->b_ev) {
	case BEV_HEAD_END:
		if (s->is_req)
			REQUEST_HEAD_DONE(x);
		else
			RESPONSE_HEAD_DONE(c, p, s->now);
		break;
	case BEV_MSG_END:
		if (!s->is_req)
			RESPONSE_DONE_NOW(c, s->now);
		break;
	case BEV_GARBAGE:
		/* not a parse failure: both directions stop, counted apart */
		if (st == PS_START && tls_record_start(s)) {
			if (s->is_req)
				request_garbage(c, false);
			stat_inc(MM_STAT_TLS_STREAMS);
			return 1;
		}
		/*
		 * A connection the agent found open (started after it) may be
		 * inside a message: skip to the exchange's next turn (see
		 * resync_turn()) once, instead of giving the stream up.
		 */
		if (c->lazy && !p->resynced) {
			if (s->is_req)
				drop_partial_request(c, false);
			p->resynced = 1;
			p->state = PS_RESYNC;
			s->w_off = len;
			stat_inc(MM_STAT_RESYNCED);
			return 1;
		}
		/* fallthrough */
	case BEV_GARBAGE_BODY:
		if (s->is_req)
			request_garbage(c, s->b_ev == BEV_GARBAGE_BODY);
		/* a pre-existing socket may never have been HTTP */
		stat_inc(c->lazy ? MM_STAT_NOT_HTTP : MM_STAT_UNPARSED);
		return 1;
	}
	/*
	 * Stop when the buffer is done rather than in one more callback:
	 * each return costs a mispredict here (see parse_step()).
	 */
	return s->w_off >= len;
}

MM_LOOP_BODY(window_step)

static __always_inline void parse_buf(struct mm_lctx *x, __u64 ubuf, __u32 len)
{
	struct mm_scratch *s = x->s;

	s->w_ubuf = ubuf;
	s->w_len = len;
	s->w_off = 0;
	MM_LOOP_G(MM_WINDOWS, MM_WINDOWS, window_step, x);
	if (s->w_off < s->w_len && x->p->state != PS_OPAQUE) {
		/* more events in one buffer than MM_WINDOWS: resync is unsafe */
		x->p->state = PS_OPAQUE;
		stat_inc(MM_STAT_SCAN_LIMIT);
	}
}

MM_LOOP_CB iov_step(__u32 i, void *ctx)
{
	struct mm_lctx *x = ctx;
	struct mm_scratch *s = x->s;
	struct mm_iovec *v;
	__u64 n;

	if (!s->x_left || x->p->state == PS_OPAQUE || x->p->state == PS_RESYNC)
		return 1;
	/* a user-memory read costs ~100 ns here: iovecs come in batches */
	if (!(i & (MM_IOV_BATCH - 1))) {
		__u64 left = s->x_cnt - i;
		__u32 sz = (left < MM_IOV_BATCH ? left : MM_IOV_BATCH) *
			   sizeof(struct mm_iovec);

		if (sz > sizeof(s->x_vec))
			sz = sizeof(s->x_vec);
		if (!sz ||
		    bpf_probe_read_user(
			    s->x_vec, sz,
			    (void *)(s->x_iov + i * sizeof(struct mm_iovec)))) {
			stat_inc(MM_STAT_NO_BUFFER);
			return 1;
		}
	}
	v = &s->x_vec[i & (MM_IOV_BATCH - 1)];
	n = v->len < s->x_left ? v->len : s->x_left;
	s->x_left -= n;
	if (n)
		parse_buf(x, v->base, n);
	return !s->x_left;
}

MM_LOOP_BODY(iov_step)

/* Body bytes we cannot (or need not) read: only counted. */
static __always_inline void skip_bytes(struct mm_lctx *x, __u32 n)
{
	struct mm_parser *p = x->p;
	__u8 st = p->state;

	if (st == PS_BODY || st == PS_CDATA || st == PS_CLOSE_BODY) {
		x->s->w_len = n;
		x->s->w_off = 0;
		window_step(0, x);
		if (x->s->w_off < n)
			goto lost;
		return;
	}
	if (st == PS_OPAQUE || st == PS_RESYNC)
		return;
lost:
	/* bytes the parser needed went by unseen: stop, loudly */
	p->state = PS_OPAQUE;
	stat_inc(MM_STAT_NO_BUFFER);
}

/*
 * HTTP/1.1 takes turns: the client's request, then the proxy's response.
 * An I/O in one direction means the other direction's message is over, so
 * a stream waiting in PS_RESYNC starts afresh with its next I/O.
 */
static __always_inline void resync_turn(struct mm_parser *other)
{
	if (other->state == PS_RESYNC)
		other->state = PS_START;
}

#ifndef MM_BOUNDED_LOOPS
/*
 * The gate is on and the client's first bytes are the HTTP/2 preface: read
 * by the proxy (downstream), or written by it (upstream h2c, gRPC
 * backends; nginx writes them with writev, the preface in the first iovec).
 */
__noinline int mm_h2_start(struct mm_conn *c, const struct mm_io_args *a,
			   __s64 ret)
{
	struct mm_iovec v;
	__u64 ubuf;
	bool on;

	if (!c || !a || ret < 24)
		return false;
	if (a->kind == MM_IO_BUF) {
		ubuf = a->buf;
	} else if (a->kind == MM_IO_IOV) {
		if (bpf_probe_read_user(&v, sizeof(v), (void *)a->buf) ||
		    v.len < 24)
			return false;
		ubuf = v.base;
	} else {
		return false;
	}
	h2_route_gen(&on);
	if (!on || !h2_preface(ubuf))
		return false;
	c->h2 = MM_H2_FEED;
	stat_inc(MM_STAT_H2_CONNS);
	return true;
}

/*
 * A connection found open whose bytes, in either direction, are HTTP/2
 * frames: its role is taken as the downstream one whatever the first I/O
 * seen suggested (on a busy connection that may have been the proxy's
 * write). An upstream h2c connection found open would be taken the same
 * way: its bound-port lock does not tell (an accepted socket's is cleared
 * by sk_clone_lock), and nothing else in the socket does without a lookup
 * of listeners. Looked at on up to
 * 16 I/Os until an HTTP/1 request head is complete: a read may start inside
 * a frame, and such bytes may even look like the start of a request.
 */
__noinline int mm_h2_late_start(struct mm_conn *c, const struct mm_io_args *a,
				__s64 ret)
{
	bool on;

	if (!c || !a || c->connect_ns || a->kind != MM_IO_BUF ||
	    c->h2_tries >= 16)
		return false;
	/* counted with the gate off too: a found-open stream stops asking */
	c->h2_tries++;
	h2_route_gen(&on);
	if (!on)
		return false;
	/* a connection found open may still be at its start */
	if (ret >= 24 && h2_preface(a->buf))
		c->h2 = MM_H2_FEED;
	else if (h2_late(a->buf, ret))
		c->h2 = MM_H2_LATE;
	else
		return false;
	stat_inc(MM_STAT_H2_CONNS);
	return true;
}
#else
/* no HTTP/2 in the bounded build (h2_feed.bpf.h) */
static __always_inline int mm_h2_start(struct mm_conn *c,
				       const struct mm_io_args *a, __s64 ret)
{
	return false;
}

static __always_inline int
mm_h2_late_start(struct mm_conn *c, const struct mm_io_args *a, __s64 ret)
{
	return false;
}
#endif

/*
 * The I/O's socket's write_seq: the sequence number after the last byte
 * the application has written (only differences mean anything).
 * Read into the scratch, not the stack: the TLS return probes' frames are
 * at 6.1's 512-byte combined limit. The program tests, which have no
 * socket, define their own.
 */
#ifndef MM_SK_WRITE_SEQ
static __always_inline __u32 sk_write_seq(struct mm_scratch *s)
{
	struct tcp_sock *tp = (struct tcp_sock *)s->io_sk;

	bpf_core_read(&s->wseq, sizeof(s->wseq), &tp->write_seq);
	return s->wseq;
}
#define MM_SK_WRITE_SEQ(s) sk_write_seq(s)
#endif

/*
 * After the parse of an I/O on a connection holding a response (see
 * response_done(); a read drops it before its own parse). A response just
 * held takes the socket's write_seq. A write is (part of) the request the
 * response answers if its bytes were already in the socket when the
 * response was read; a write made after has a write_seq past it, and no
 * later write can be that request then. The request such a write
 * completes is reported with the held response; its start is known no
 * better than the response's end: its write's tracepoint ran after that.
 * Not inlined: the TLS return probes' frames are at 6.1's 512-byte
 * combined stack limit, and this runs only on the rare held path.
 */
static __noinline void held_after(struct mm_conn *c, struct mm_scratch *x)
{
	struct mm_pending *s;

	if (c->resp_held == MM_HELD_NEW) {
		if (!x->io_sk) {
			held_drop(c);
			return;
		}
		c->held_wseq = MM_SK_WRITE_SEQ(x);
		c->resp_held = MM_HELD_WAIT;
		return;
	}
	s = pipe_front(c);
	if ((__s32)(c->held_wseq - MM_SK_WRITE_SEQ(x)) < 0) {
		held_drop(c);
		return;
	} else if (!s || !s->head_done) {
		return; /* its head ends in a later write */
	}
	if (s->start_ns > c->last_resp_ns)
		s->start_ns = c->last_resp_ns;
	emit_exchange(c, s, c->last_resp_ns, 0);
	pipe_pop(c);
	stat_inc(MM_STAT_RESP_FIRST);
	held_drop(c);
}

#ifndef MM_BOUNDED_LOOPS
/*
 * The request whose parse a response was handed to (busy_hold(),
 * exchange.bpf.h): its head done, or cut and answered early (paired as it
 * is, as ever). Not inlined, as held_after().
 */
static __noinline void busy_paired(struct mm_conn *c)
{
	busy_pair(c);
}

/*
 * An upstream request write's parse ended: a response handed to it while
 * it ran is taken and paired at once (the narrower the gap, the less a
 * close on another CPU meanwhile can report that request aborted).
 */
static __always_inline void busy_end(struct mm_conn *c)
{
	/* a fetching atomic: the parse's stores are seen before the clear,
	 * the load of busy_held after it (the writer's half of busy_hold()) */
	__u64 old = __sync_fetch_and_and(&c->busy_word, ~MM_BUSY_REQ);

	asm volatile("" : : "r"(old));
	if (*(volatile __u32 *)&c->busy_held && busy_take(c))
		busy_paired(c);
}
#endif

/*
 * RET bytes (> 0) moved on connection C (socket SK, 0: none) through the
 * syscall arguments A: feed them to the request or response parser.
 */
static __always_inline void capture_io(struct mm_conn *c,
				       const struct mm_io_args *a, __u64 sk,
				       long ret, bool is_read)
{
	struct mm_lctx x = { .c = c };
	__u32 zero = 0;
	bool is_req;
	__u8 was_h2 __attribute__((unused));

	if (c->role == MM_ROLE_UNKNOWN)
		c->role = is_read ? MM_ROLE_DOWN : MM_ROLE_UP;
	/* a read first: the held response answered no request that will be
	 * seen (sent on the backend's own, or written before the agent looked) */
	if (c->resp_held && is_read)
		held_drop(c);
	if (!c->h2 && c->lazy && mm_h2_late_start(c, a, ret))
		c->role = MM_ROLE_DOWN;
	is_req = (c->role == MM_ROLE_DOWN) == is_read;
	if (c->h2 || (is_req && !c->next_seq && c->req.state == PS_START &&
		      mm_h2_start(c, a, ret))) {
		/* an upstream request is not this stream's: own head decides */
		if (is_req) {
			thread_link_forget();
			if (c->ra_held)
				route_acc_drop(c);
		}
		if (c->h2 != MM_H2_FEED && c->h2 != MM_H2_LATE)
			return;
		x.s = bpf_map_lookup_elem(&mm_scratch, &zero);
		if (!x.s)
			return;
		x.s->now = bpf_ktime_get_ns();
		mm_h2_feed(c, x.s, a, ret,
			   is_req ? MM_DIR_FROM_CLIENT : MM_DIR_FROM_SERVER);
		return;
	}
	x.p = is_req ? &c->req : &c->resp;
	resync_turn(is_req ? &c->resp : &c->req);
	if (!is_req)
		c->last_resp_ns = bpf_ktime_get_ns();
	if (x.p->state == PS_OPAQUE || x.p->state == PS_RESYNC) {
		if (is_req && c->role == MM_ROLE_DOWN)
			thread_link_forget();
		/* a head cut before the stream stopped being HTTP/1 (101) */
		if (is_req && c->ra_held)
			route_acc_drop(c);
		return;
	}
	x.s = bpf_map_lookup_elem(&mm_scratch, &zero);
	if (!x.s)
		return;
	x.s->is_req = is_req;
	x.s->io_sk = sk;
	x.s->now = is_req ? bpf_ktime_get_ns() : c->last_resp_ns;
	was_h2 = c->h2;
	/*
	 * What a request head cut by the last read has said of its route.
	 * The windows of one I/O share the scratch copy: only between I/Os
	 * may another socket's parse on this CPU overwrite it.
	 */
	if (is_req && c->ra_saved)
		route_acc_load(&x);

#ifndef MM_BOUNDED_LOOPS
	if (is_req && c->role == MM_ROLE_UP) {
		c->req_busy = 1;
		/* seen before the slot the parse makes (busy_hold()) */
		conn_order(c);
	}
#endif
	switch (a->kind) {
	case MM_IO_BUF:
		parse_buf(&x, a->buf, ret);
		break;
	case MM_IO_IOV:
	case MM_IO_MSG: {
		__u64 cnt = a->cnt;

		x.s->x_iov = a->buf;
		if (a->kind == MM_IO_MSG) {
			struct user_msghdr m;

			if (bpf_probe_read_user(&m, sizeof(m),
						(void *)a->buf)) {
				skip_bytes(&x, ret);
				break;
			}
			x.s->x_iov = (__u64)m.msg_iov;
			cnt = m.msg_iovlen;
		}
		if (cnt > MM_IOV_MAX)
			cnt = MM_IOV_MAX;
		x.s->x_left = ret;
		x.s->x_cnt = cnt;
		MM_LOOP_G(MM_IOV_MAX, cnt, iov_step, &x);
		if (x.s->x_left && x.p->state != PS_OPAQUE &&
		    x.p->state != PS_RESYNC) {
			x.p->state = PS_OPAQUE;
			stat_inc(MM_STAT_IOV_LIMIT);
		}
		break;
	}
	case MM_IO_FILE:
		/* file bytes are body bytes: counted, never parsed */
		if (!is_req && x.p->state == PS_START)
			c->resp_bytes += ret;
		else
			skip_bytes(&x, ret);
		break;
	default:
		skip_bytes(&x, ret);
		break;
	}
#ifndef MM_BOUNDED_LOOPS
	/* its own mark (the role may have changed since: HTTP/2 found late) */
	if (is_req && c->req_busy)
		busy_end(c);
#endif
	if (is_req && x.p->state >= PS_METHOD && x.p->state <= PS_END_LF)
		route_acc_save(&x);
#ifndef MM_BOUNDED_LOOPS
	/*
	 * A 101 to "Upgrade: h2c" switched the connection inside this write:
	 * what follows the 101 head in the buffer is HTTP/2 already.
	 */
	if (!was_h2 && c->h2 == MM_H2_FEED) {
		struct mm_io_args rest = { .kind = MM_IO_BUF };
		__u32 off = x.s->w_off;

		if (a->kind != MM_IO_BUF) {
			/* h2 bytes at an offset inside iovecs: not followed */
			if (x.s->x_left || x.s->w_off < x.s->w_len) {
				c->h2 = MM_H2_DEAD;
				stat_inc(MM_STAT_H2_LOST);
				h2_close(c, x.s->now, MM_DATA_LOST);
			}
		} else if (off < ret) {
			rest.buf = a->buf + off;
			mm_h2_feed(c, x.s, &rest, ret - off,
				   MM_DIR_FROM_SERVER);
		}
	}
#endif
	/* last: nothing is live across the call (the frame's size, above) */
	if (c->resp_held)
		held_after(c, x.s);
}

/*
 * Was this I/O of RET bytes the first on the socket? A connection first seen
 * mid-stream (the agent started later) may begin inside a body: its garbage
 * is "not HTTP", not a parse failure. Counted from the TCP sequence numbers,
 * so no accept()/connect() hook is needed: bytes read so far are
 * bytes_received - (rcv_nxt - copied_seq); written so far,
 * write_seq - snd_una + bytes_acked.
 *
 * Read without the socket lock while segments and ACKs land on another
 * CPU, which add to bytes_received (bytes_acked) before they move rcv_nxt
 * (snd_una). Loading the counter first, the pair can only be seen half
 * updated the other way round: a count short by the new bytes, never long.
 * Short of RET itself (a fresh socket, a segment in between) is "first".
 * The loads are separate statements: C does not order an expression's
 * operands. Before, either half update made a fresh connection look found
 * open (a test_garbage run under load once counted its garbage as
 * resynced).
 */
static __always_inline bool tcp_first_io(struct tcp_sock *tp, long ret,
					 bool is_read)
{
	__s64 count, done;
	__u32 ahead;

	if (is_read) {
		count = BPF_CORE_READ(tp, bytes_received);
		ahead = BPF_CORE_READ(tp, rcv_nxt);
		ahead -= BPF_CORE_READ(tp, copied_seq);
		done = count - ahead;
	} else {
		count = BPF_CORE_READ(tp, bytes_acked);
		ahead = BPF_CORE_READ(tp, write_seq);
		ahead -= BPF_CORE_READ(tp, snd_una);
		done = count + ahead;
	}
	/* signed: short by more than was read so far is below zero */
	if (done < ret)
		return true;
	/*
	 * Seen here: one byte more than read on fresh connections whose
	 * client sent more than the proxy's buffer held; never more.
	 */
	return done - ret <= 1;
}

/* ret == 0 on a read: EOF ends a close-delimited response from a backend. */
static __always_inline void capture_eof(struct mm_conn *c)
{
	if (c->role == MM_ROLE_UP && c->resp.state == PS_CLOSE_BODY) {
		response_done(c, c->last_resp_ns, MM_EV_CLOSE_DELIM);
		c->resp.state = PS_START;
	}
}

#endif /* MM_CAPTURE_BPF_H */
