/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * HTTP/2 connections (gate HTTP2): the kernel only recognises them (the
 * client's connection preface as its first bytes: prior-knowledge h2c, or
 * h2 inside TLS after ALPN) and sends every byte of both directions, in
 * order, to the user-space decoder (agent/h2/: frames, HPACK with its
 * dynamic table, streams), which needs them all. A connection whose bytes
 * could not all be read or sent up stops being fed (MM_EVT_H2_CLOSE with
 * MM_DATA_LOST): what the decoder then has open is dropped and counted,
 * never guessed.
 */
#ifndef MM_H2_FEED_BPF_H
#define MM_H2_FEED_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/pipeline.bpf.h"

#define MM_H2_BYTES (256 * 1024) /* sent up per syscall at most */

/* "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" as little-endian words */
#define H2_PREFACE_0 0x5448202a20495250ULL
#define H2_PREFACE_1 0x0a0d302e322f5054ULL
#define H2_PREFACE_2 0x0a0d0a0d4d530a0dULL

static __always_inline __u32 h2_route_gen(bool *enabled)
{
	__u32 zero = 0;
	struct mm_config *cfg = bpf_map_lookup_elem(&mm_config, &zero);

	*enabled = cfg && (cfg->flags & MM_CFG_HTTP2);
	return cfg ? cfg->route_gen : 0;
}

/* The user buffer starts with the client connection preface. */
static __always_inline bool h2_preface(__u64 ubuf)
{
	__u64 w[3];

	if (bpf_probe_read_user(w, sizeof(w), (void *)ubuf))
		return false;
	return w[0] == H2_PREFACE_0 && w[1] == H2_PREFACE_1 &&
	       w[2] == H2_PREFACE_2;
}

/*
 * Does a frame header (9 bytes) look like one a client sends? Length within
 * the default SETTINGS_MAX_FRAME_SIZE (an HTTP/1 request's first bytes are
 * ASCII: a length of megabytes), a known type, the reserved bit clear, the
 * stream id and length each type requires.
 */
static __always_inline bool h2_frame_ok(const __u8 *b)
{
	__u32 len = (__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2];
	__u32 sid = ((__u32)b[5] << 24 | (__u32)b[6] << 16 | (__u32)b[7] << 8 |
		     b[8]);
	__u8 type = b[3];

	if (len > 16384 || type > 9 || (sid & 0x80000000))
		return false;
	switch (type) {
	case 4: /* SETTINGS */
		return !sid && len % 6 == 0;
	case 6: /* PING */
		return !sid && len == 8;
	case 7: /* GOAWAY */
		return !sid && len >= 8;
	case 8: /* WINDOW_UPDATE */
		return len == 4;
	case 3: /* RST_STREAM */
		return sid && len == 4;
	case 2: /* PRIORITY */
		return sid && len == 5;
	case 5: /* PUSH_PROMISE: never from a client */
		return false;
	default: /* DATA, HEADERS, CONTINUATION */
		return sid != 0;
	}
}

/*
 * A connection found open (the agent or the gate started after it) whose
 * first client bytes are HTTP/2 frames: one plausible frame header, and a
 * second one after it when the read holds more. Joined late, the decoder
 * resolves only what the connection says after this point.
 */
static __always_inline bool h2_late(__u64 ubuf, __u64 len)
{
	__u8 b[9];
	__u32 next;

	if (len < 9 || bpf_probe_read_user(b, sizeof(b), (void *)ubuf) ||
	    !h2_frame_ok(b))
		return false;
	next = 9 + ((__u32)b[0] << 16 | (__u32)b[1] << 8 | b[2]);
	if (len < next + 9)
		return len == next;
	return !bpf_probe_read_user(b, sizeof(b), (void *)(ubuf + next)) &&
	       h2_frame_ok(b);
}

#ifndef MM_BOUNDED_LOOPS
struct mm_h2_fctx {
	struct mm_conn *c;
	__u64 now;
	__u64 ubuf; /* the buffer being sent */
	__u64 iov;  /* iovec array, for MM_IO_IOV/MSG */
	__u64 left; /* bytes of the syscall still to send */
	__u32 len;  /* of the current buffer */
	__u32 off;
	__u32 cnt;  /* iovecs */
	__u32 next; /* next iovec */
	__u32 gen;
	__u8 dir;
	__u8 lost;
	__u8 flags;
	__u8 is_iov;
};

/*
 * One step: the next chunk of the current buffer up, or the next iovec.
 * One flat loop (nested bpf_loop callbacks made the verifier give up).
 */
static long h2_step(__u32 i, void *ctx)
{
	struct mm_h2_fctx *f = ctx;
	struct mm_data_event *h;
	struct mm_h2_rec *r;
	__u32 zero = 0, n;

	if (!f->left || f->lost)
		return 1;
	if (f->off >= f->len) {
		struct mm_iovec v;

		if (!f->is_iov || f->next >= f->cnt)
			return 1;
		if (bpf_probe_read_user(
			    &v, sizeof(v),
			    (void *)(f->iov +
				     f->next * sizeof(struct mm_iovec)))) {
			f->lost = 1;
			return 1;
		}
		f->next++;
		f->ubuf = v.base;
		f->len = v.len < f->left ? v.len : f->left;
		f->off = 0;
		return 0;
	}
	r = bpf_map_lookup_elem(&mm_h2_buf, &zero);
	if (!r) {
		f->lost = 1;
		return 1;
	}
	n = f->len - f->off;
	if (n > MM_DATA_CHUNK)
		n = MM_DATA_CHUNK;
	/* n in [1, MM_DATA_CHUNK]: the mask keeps the verifier's bounds */
	barrier_var(n);
	n &= 2 * MM_DATA_CHUNK - 1;
	if (!n || n > MM_DATA_CHUNK ||
	    bpf_probe_read_user(r->raw + sizeof(*h), n,
				(void *)(f->ubuf + f->off))) {
		f->lost = 1;
		return 1;
	}
	h = (struct mm_data_event *)r->raw;
	h->type = MM_EVT_H2_DATA;
	h->dir = f->dir;
	h->leg = f->c->role == MM_ROLE_UP ? MM_LEG_UPSTREAM : MM_LEG_DOWNSTREAM;
	h->flags = f->flags;
	h->len = n;
	h->tgid = f->c->tgid;
	h->gw = f->c->gw;
	h->route_gen = f->gen;
	h->conn_id = f->c->conn_id;
	h->ts_ns = f->now;
	if (bpf_ringbuf_output(&mm_events, r, sizeof(*h) + n, 0)) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		f->lost = 1;
		return 1;
	}
	stat_inc(MM_STAT_EVENTS);
	f->off += n;
	f->left -= n;
	return 0;
}

/*
 * "Upgrade: h2c" answered with 101 (RFC 7540 3.2): the upgraded request is
 * stream 1 of the HTTP/2 connection that starts now. Its head (kept in
 * mm_conn_ext when it ended) goes up first, flagged MM_DATA_UPGRADE, so the
 * decoder knows stream 1; its HTTP/1 slot is popped without an exchange.
 */
__noinline int mm_h2_switch(struct mm_conn *c, __u64 start_ns)
{
	struct mm_data_event *h;
	struct mm_conn_ext *e;
	struct mm_h2_rec *r;
	__u32 zero = 0, len;
	bool on;
	__u32 gen = h2_route_gen(&on);

	if (!on || !c)
		return false;
	r = bpf_map_lookup_elem(&mm_h2_buf, &zero);
	if (!r)
		return false;
	/* the upgrade request's head, kept at its end (head_copy.bpf.h) */
	e = pipe_ext(c, false);
	if (!e || c->head_gap)
		return false;
	h = (struct mm_data_event *)r->raw;
	len = c->head_len;
	if (len > MM_HEAD_MAX)
		len = MM_HEAD_MAX;
	bpf_probe_read_kernel(r->raw + sizeof(*h), MM_HEAD_MAX, e->headbuf);
	h->type = MM_EVT_H2_DATA;
	h->dir = MM_DIR_FROM_CLIENT;
	h->leg = MM_LEG_DOWNSTREAM;
	h->flags = MM_DATA_UPGRADE | MM_DATA_FROM_START;
	h->len = len;
	h->tgid = c->tgid;
	h->gw = c->gw;
	h->route_gen = gen;
	h->conn_id = c->conn_id;
	h->ts_ns = start_ns;
	barrier_var(len);
	len &= 2 * MM_HEAD_MAX - 1;
	if (len > MM_HEAD_MAX)
		return false;
	if (bpf_ringbuf_output(&mm_events, r, sizeof(*h) + len, 0)) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return false;
	}
	stat_inc(MM_STAT_EVENTS);
	stat_inc(MM_STAT_H2_CONNS);
	c->h2 = MM_H2_FEED;
	return true;
}
#else
/*
 * The bounded build (compat.bpf.h) does not follow HTTP/2: these global
 * functions take pointers, which a global function may take from 5.12 on
 * only, and the feed's loop is too long to walk inlined.
 */
static __always_inline int mm_h2_switch(struct mm_conn *c, __u64 start_ns)
{
	return false;
}
#endif

/* MM_EVT_H2_CLOSE: the decoder ends the connection (or drops it: lost). */
static __always_inline void h2_close(struct mm_conn *c, __u64 now, __u8 flags)
{
	struct mm_data_event *e;
	bool on;

	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e), 0);
	if (!e) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return;
	}
	e->type = MM_EVT_H2_CLOSE;
	e->dir = 0;
	e->leg = c->role == MM_ROLE_UP ? MM_LEG_UPSTREAM : MM_LEG_DOWNSTREAM;
	e->flags = flags;
	e->len = 0;
	e->tgid = c->tgid;
	e->gw = c->gw;
	e->route_gen = h2_route_gen(&on);
	e->conn_id = c->conn_id;
	e->ts_ns = now;
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	stat_inc(MM_STAT_EVENTS);
}

#ifndef MM_BOUNDED_LOOPS
/*
 * RET bytes of an HTTP/2 connection moved through the syscall arguments
 * (buffer, iovec array or msghdr): all of them up, or the feed stops.
 * A global function: verified once on its own, not in every caller's
 * state (inlined into the socket hooks it made their verification too
 * complex: "sequence of 8193 jumps").
 */
__noinline int mm_h2_feed(struct mm_conn *c, struct mm_scratch *s,
			  const struct mm_io_args *a, __s64 ret, __u32 dir)
{
	struct mm_h2_fctx f = { .left = ret, .dir = dir };
	__u64 buf, cnt;
	__u32 kind;
	bool on;

	if (!c || !s || !a || ret <= 0)
		return 0;
	f.c = c;
	buf = a->buf;
	cnt = a->cnt;
	kind = a->kind;
	f.gen = h2_route_gen(&on);
	if (!on) {
		/* the gate went off: the connection is not followed further */
		c->h2 = MM_H2_DEAD;
		h2_close(c, s->now, MM_DATA_LOST);
		return 0;
	}
	/*
	 * Found by its preface: the client's side from its first byte. (An h2
	 * server may write SETTINGS before it reads the preface; those bytes
	 * went by as an HTTP/1 response stream, and its next write starts at a
	 * frame boundary.) Found by its frames: joined late.
	 */
	f.flags = c->h2 == MM_H2_LATE ? 0 : MM_DATA_FROM_START;
	f.now = s->now;
	if (kind == MM_IO_BUF) {
		f.ubuf = buf;
		f.len = ret;
	} else if (kind == MM_IO_IOV || kind == MM_IO_MSG) {
		f.is_iov = 1;
		f.iov = buf;
		if (kind == MM_IO_MSG) {
			struct user_msghdr m;

			if (bpf_probe_read_user(&m, sizeof(m), (void *)buf)) {
				f.lost = 1;
				goto out;
			}
			f.iov = (__u64)m.msg_iov;
			cnt = m.msg_iovlen;
		}
		f.cnt = cnt > MM_IOV_MAX ? MM_IOV_MAX : cnt;
	} else {
		f.lost = 1; /* sendfile, io_uring: bytes we cannot read */
		goto out;
	}
	/*
	 * One step per iovec and one per chunk: MM_IOV_MAX + 64 steps cover
	 * 256 KiB in up to ~960 iovecs; a syscall past that stops the feed
	 * (counted).
	 */
	bpf_loop(MM_IOV_MAX + MM_H2_BYTES / MM_DATA_CHUNK, h2_step, &f, 0);
	if (f.left)
		f.lost = 1;
out:
	if (f.lost) {
		c->h2 = MM_H2_DEAD;
		stat_inc(MM_STAT_H2_LOST);
		h2_close(c, s->now, MM_DATA_LOST);
	}
	return 0;
}
#else
static __always_inline int mm_h2_feed(struct mm_conn *c, struct mm_scratch *s,
				      const struct mm_io_args *a, __s64 ret,
				      __u32 dir)
{
	return 0;
}
#endif

#endif /* MM_H2_FEED_BPF_H */
