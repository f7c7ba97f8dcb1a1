/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Request/response bookkeeping of one connection: the pipeline of requests
 * awaiting responses, what happens at the end of a head or a message, and
 * the events sent to user space.
 */
#ifndef MM_EXCHANGE_BPF_H
#define MM_EXCHANGE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/compat.bpf.h"
#include "bpf/conn.bpf.h"
#include "bpf/h2_feed.bpf.h"
#include "bpf/head_copy.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/pipeline.bpf.h"
#include "bpf/route_acc.bpf.h"
#include "bpf/route_lookup.bpf.h"

/*
 * Set by the agent before load: wake the reader only once this many bytes
 * are waiting. A wakeup per event is an irq_work IPI — in a VM an APIC MSR
 * write that traps to the hypervisor, microseconds each; the agent drains on
 * a short timer anyway.
 */
const volatile __u64 mm_wakeup_bytes = 0;

static __always_inline __u64 submit_flags(void)
{
	return bpf_ringbuf_query(&mm_events, BPF_RB_AVAIL_DATA) >=
			       mm_wakeup_bytes
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

static __always_inline void fill_event(struct mm_http_event *e,
				       const struct mm_conn *c,
				       const struct mm_pending *s, __u8 type)
{
	e->type = type;
	e->leg = c->role == MM_ROLE_UP ? MM_LEG_UPSTREAM : MM_LEG_DOWNSTREAM;
	e->method = s->method;
	e->flags = s->flags;
	e->status = 0;
	e->head_len = 0;
	e->tgid = c->tgid;
	e->gw = c->gw;
	e->route_gen = s->route_gen;
	e->route_id = s->route_id;
	e->rule_idx = s->rule_idx;
	e->_pad = 0;
	e->req_seq = s->seq;
	e->parent_seq = s->parent_seq;
	e->conn_id = c->conn_id;
	e->parent_conn_id = s->parent_conn_id;
	e->start_ns = s->start_ns;
	e->end_ns = 0;
	e->req_bytes = s->req_bytes;
	e->resp_bytes = 0;
}

static __always_inline void
emit_exchange(struct mm_conn *c, struct mm_pending *s, __u64 end_ns, __u8 flags)
{
	struct mm_http_event *e;

	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e), 0);
	if (!e) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return;
	}
	fill_event(e, c, s, MM_EVT_EXCHANGE);
	e->flags |= flags;
	e->status = c->status;
	e->end_ns = end_ns;
	e->resp_bytes = c->resp_bytes;
	bpf_ringbuf_submit(e, submit_flags());
	stat_inc(MM_STAT_EVENTS);
	if (flags & MM_EV_ABORTED)
		stat_inc(MM_STAT_ABORTED);
}

/*
 * The head of a request user space must finish, then its exchange later. A
 * head whose earlier windows were not kept cannot be finished: unknown.
 */
static __always_inline void emit_head(struct mm_lctx *x, struct mm_pending *s)
{
	struct mm_http_event *e;
	int len;

	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e) + 2 * MM_HEAD_MAX, 0);
	if (!e) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return;
	}
	len = head_copy_out(x, x->s->b_used, e->head);
	if (len < 0) {
		bpf_ringbuf_discard(e, 0);
		s->route_id = MM_ROUTE_UNKNOWN;
		s->flags |= MM_EV_HEAD_TRUNC;
		return;
	}
	fill_event(e, x->c, s, MM_EVT_HEAD);
	e->head_len = len;
	/* the listener port route_lookup() (or the link) decided it in */
	e->status = x->s->rl_lport;
	bpf_ringbuf_submit(e, submit_flags());
	stat_inc(MM_STAT_EVENTS);
	stat_inc(MM_STAT_DEFERRED);
}

/*
 * A request past MM_PIPELINE_DEPTH has no slot: it is still reported, with
 * its status but no route (unknown) and no timing (MM_EV_UNTRACKED).
 */
static __always_inline void emit_untracked(struct mm_conn *c, __u8 flags)
{
	struct mm_overflow *o = pipe_ovf(c, c->ovf_front);
	struct mm_http_event *e;

	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e), 0);
	if (!e) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = MM_EVT_EXCHANGE;
	e->leg = c->role == MM_ROLE_UP ? MM_LEG_UPSTREAM : MM_LEG_DOWNSTREAM;
	e->flags = MM_EV_UNTRACKED | flags;
	e->status = c->status;
	e->tgid = c->tgid;
	e->gw = c->gw;
	e->route_id = MM_ROUTE_UNKNOWN;
	e->req_seq = c->ovf_front;
	if (o && o->seq == c->ovf_front)
		e->start_ns = o->start_ns;
	if (o && o->valid && o->seq == c->ovf_front) {
		e->route_gen = o->route_gen;
		e->route_id = o->route_id;
		e->rule_idx = o->rule_idx;
		e->method = o->method;
	}
	c->ovf_front++;
	e->conn_id = c->conn_id;
	e->resp_bytes = c->resp_bytes;
	e->end_ns = c->finished ? c->finished_ns : c->last_resp_ns;
	bpf_ringbuf_submit(e, submit_flags());
	stat_inc(MM_STAT_EVENTS);
	stat_inc(MM_STAT_PIPELINE_FULL);
	if (flags & MM_EV_ABORTED)
		stat_inc(MM_STAT_ABORTED);
}

/*
 * An upstream connection opened for a request and closed before that
 * request was written (the client went away first): the proxy did try the
 * backend, and logs it as an upstream attempt without a status.
 */
static __always_inline void emit_unsent(struct mm_conn *c, __u64 now)
{
	struct mm_http_event *e;

	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e), 0);
	if (!e) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return;
	}
	__builtin_memset(e, 0, sizeof(*e));
	e->type = MM_EVT_EXCHANGE;
	e->leg = MM_LEG_UPSTREAM;
	e->flags = MM_EV_ABORTED | MM_EV_NO_RESPONSE;
	e->tgid = c->tgid;
	e->gw = c->gw;
	e->route_gen = c->bind.route_gen;
	e->route_id = c->bind.route_id;
	e->rule_idx = c->bind.rule_idx;
	e->parent_seq = c->bind.seq;
	e->conn_id = c->conn_id;
	e->parent_conn_id = c->bind.conn_id;
	e->start_ns = c->connect_ns;
	e->end_ns = now;
	bpf_ringbuf_submit(e, submit_flags());
	stat_inc(MM_STAT_EVENTS);
	stat_inc(MM_STAT_ABORTED);
}

#ifndef MM_BOUNDED_LOOPS
/* busy_word's bytes: req_busy is its third, busy_held its upper half */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MM_BUSY_REQ  (0xffULL << 16)
#define MM_BUSY_HELD (0xffffffffULL << 32)
#else
#define MM_BUSY_REQ  (0xffULL << 40)
#define MM_BUSY_HELD 0xffffffffULL
#endif

/*
 * Clears busy_held, fully ordered; true for the one caller that found it
 * set. The other bytes of the word (lport, req_busy) are left as they are.
 */
static __always_inline bool busy_take(struct mm_conn *c)
{
	return __sync_fetch_and_and(&c->busy_word, ~MM_BUSY_HELD) &
	       MM_BUSY_HELD;
}

/* A response handed over (busy_held) paired with the front request. */
static __always_inline void busy_pair(struct mm_conn *c)
{
	struct mm_pending *s = pipe_front(c);

	if (s) {
		if (s->start_ns > c->last_resp_ns)
			s->start_ns = c->last_resp_ns;
		emit_exchange(c, s, c->last_resp_ns, 0);
		pipe_pop(c);
		stat_inc(MM_STAT_RESP_IN_PARSE);
	}
	c->resp_bytes = 0;
	c->status = 0;
	c->resp_started = 0;
}

/*
 * A response read while the request it answers is still being parsed on
 * another CPU (the write's send tracepoint runs; its head is begun, not
 * done): handed to that parse, which pairs it as it ends (busy_end()),
 * rather than paired now with a request whose method and route are not
 * known yet. Each side stores its word, fences, then loads the other's
 * (Dekker): at least one sees the other. Whichever then takes busy_held
 * (busy_take()) pairs the response, the other leaves it. True: the writer
 * has it; status, bytes and end stay as they are for it, which holds
 * while no other response is read before that parse ends (HTTP/1: the
 * backend answers nothing it was not sent). Needs fetching atomics (5.12):
 * not in the bounded build, where the response pairs at once, as it
 * always did.
 */
static __always_inline bool busy_hold(struct mm_conn *c)
{
	c->busy_held = 1;
	conn_fence(c);
	if (*(volatile __u8 *)&c->req_busy)
		return true;
	return !busy_take(c);
}
#endif

/* The response to the front request is complete: report it, pop it. */
static __always_inline void response_done(struct mm_conn *c, __u64 end_ns,
					  __u8 flags)
{
	struct mm_pending *s = pipe_front(c);

	if (s && c->role == MM_ROLE_UP) {
#ifndef MM_BOUNDED_LOOPS
		if (!s->head_done && !flags && busy_hold(c))
			return;
#endif
		/* a done head's route was stored before head_done */
		conn_order(c);
	}
	if (s) {
		emit_exchange(c, s, end_ns, flags);
		pipe_pop(c);
	} else if (c->untracked) {
		/* slots fill again only once the untracked ones are answered,
		 * so with no slot left this response is the oldest untracked's */
		emit_untracked(c, flags);
		c->untracked--;
	} else if (!flags && c->role == MM_ROLE_UP) {
		/*
		 * The socket tracepoints run after the bytes moved. A proxy
		 * that writes a request on one thread and reads its response
		 * on another (Go's transport) can have the response read
		 * while the writer is still between tcp_sendmsg() and its
		 * tracepoint: status, bytes and end are kept for that write
		 * (capture_io() decides by write_seq whose it is).
		 */
		c->resp_held = MM_HELD_NEW;
		c->resp_started = 0;
		return;
	}
	c->resp_bytes = 0;
	c->status = 0;
	c->resp_started = 0;
}

/* The held response answered no request seen: dropped, as before holding. */
static __always_inline void held_drop(struct mm_conn *c)
{
	c->resp_held = MM_HELD_NO;
	c->resp_bytes = 0;
	c->status = 0;
	c->resp_started = 0;
}

static long finish_one(__u32 i, void *ctx)
{
	struct mm_conn *c = *(struct mm_conn **)ctx;

	if (!c->count && !c->untracked)
		return 1;
	/*
	 * Includes a request whose head never ended: the client gave up
	 * mid-request (nginx logs it as 400). Its route is unknown.
	 */
	response_done(c, c->finished_ns,
		      MM_EV_ABORTED |
			      (c->resp_started ? 0 : MM_EV_NO_RESPONSE));
	return 0;
}

/*
 * Connection gone: a close-delimited body ends, every request still
 * waiting (tracked or past the pipeline depth) is reported aborted.
 */
static __always_inline void conn_finish(struct mm_conn *c, __u64 now)
{
	struct mm_conn *cp = c;

	if (c->finished)
		return;
	c->finished = 1;
	/* an I/O parsed on another CPU may be making entries: conn_fence() */
	conn_fence(c);
	c->finished_ns = now;
	stat_inc(MM_STAT_CONNS_CLOSED);
	route_acc_drop(c);
	if (c->h2) {
		/*
		 * Its streams are the decoder's: it ends them (a feed that lost
		 * bytes says so again: its first close may have been lost too).
		 */
		h2_close(c, now, c->h2 == MM_H2_DEAD ? MM_DATA_LOST : 0);
		pipe_free(c);
		return;
	}
	/* its status and bytes are no aborted request's */
	if (c->resp_held)
		held_drop(c);
#ifndef MM_BOUNDED_LOOPS
	/* a response handed to a parse that has not taken it yet answered
	 * the front request: not aborted (the parse finds it gone) */
	if (c->busy_held && busy_take(c))
		busy_pair(c);
#endif
	if (c->resp.state == PS_CLOSE_BODY)
		response_done(c, c->last_resp_ns, MM_EV_CLOSE_DELIM);
	if (c->role == MM_ROLE_UP && c->established && c->bind_valid &&
	    !c->next_seq)
		emit_unsent(c, now);
	/* untracked counts up to 255 more than the pipeline */
	MM_LOOP(MM_PIPELINE_DEPTH + 256, MM_PIPELINE_DEPTH + 256, finish_one,
		&cp);
	pipe_free(c);
}

/*
 * The request being parsed is not an exchange (the proxy's 400 to it is not
 * one either): it gives its slot back. Garbage in a chunked body (IN_BODY)
 * ends a request whose head was complete: it stays, the proxy answers it
 * (an untracked one has no head_done to tell).
 */
static __always_inline void drop_partial_request(struct mm_conn *c,
						 bool in_body)
{
	struct mm_pending *s = c->untracked ? NULL : pipe_newest(c);

	if (c->untracked) {
		if (!in_body)
			c->untracked--;
	} else if (s && !s->head_done) {
		pipe_drop_newest(c);
	}
}

/*
 * The request stream stopped being HTTP: responses can no longer be paired
 * once nothing valid is pending.
 */
static __always_inline void request_garbage(struct mm_conn *c, bool in_body)
{
	drop_partial_request(c, in_body);
	if (!c->count && !c->untracked)
		c->resp.state = PS_OPAQUE;
}

static __always_inline void recent_key(const struct mm_conn *c,
				       const struct mm_route_acc *a,
				       __u8 method, struct mm_recent_key *k)
{
	k->tgid = c->tgid;
	k->method = method;
	k->host_hash = a->host_hash;
	k->path_hash = a->path_hash;
}

static __always_inline __u64 recent_tag(const struct mm_recent_key *k)
{
	return (k->host_hash * 31 + k->path_hash) * 31 +
	       (((__u64)k->tgid << 8) | k->method);
}

static __always_inline struct mm_recent_slot *recent_slot(__u64 tag)
{
	__u32 i = (tag ^ (tag >> 32)) & (MM_RECENT_SLOTS - 1);

	return bpf_map_lookup_elem(&mm_recent, &i);
}

static __always_inline void set_thread_link(struct mm_conn *c,
					    const struct mm_route_acc *a,
					    struct mm_pending *s)
{
	struct mm_link l = {
		.conn_id = c->conn_id,
		.seq = s->seq,
		.route_gen = s->route_gen,
		.route_id = s->route_id,
		.rule_idx = s->rule_idx,
		.valid = 1,
	};
	struct mm_recent_key k = {};
	struct mm_recent_slot *r;
	struct mm_link *tl;

	tl = thread_link(true);
	if (tl)
		*tl = l;
	else
		stat_inc(MM_STAT_LINK_FAIL);
	/* without its Host and path, no content to be found by */
	if (a->lost)
		return;
	recent_key(c, a, s->method, &k);
	r = recent_slot(recent_tag(&k));
	if (!r)
		return;
	r->tag = 0; /* a reader meanwhile misses rather than mixes */
	r->k = k;
	r->conn_id = l.conn_id;
	r->seq = l.seq;
	r->route_gen = l.route_gen;
	r->route_id = l.route_id;
	r->rule_idx = l.rule_idx;
	r->lport = c->lport;
	r->tag = recent_tag(&k);
}

/*
 * Which downstream request an upstream request serves. First by content:
 * haproxy and Envoy forward Host, path and method unchanged, but may write
 * the upstream request turns later from another thread. When the proxy
 * rewrote Host (nginx's default proxy_pass), by thread: see inherit_link().
 * Returns false when there was no content match.
 */
static __always_inline bool link_by_content(struct mm_lctx *x,
					    struct mm_pending *s)
{
	struct mm_conn *c = x->c;
	struct mm_recent_key k = {};
	struct mm_recent_slot *r;
	__u64 tag;

	if (x->s->ra.lost)
		return false;
	recent_key(c, &x->s->ra, s->method, &k);
	tag = recent_tag(&k);
	r = recent_slot(tag);
	if (!r || r->tag != tag || r->k.tgid != k.tgid ||
	    r->k.method != k.method || r->k.host_hash != k.host_hash ||
	    r->k.path_hash != k.path_hash)
		return false;
	s->parent_conn_id = r->conn_id;
	s->parent_seq = r->seq;
	s->route_gen = r->route_gen;
	s->route_id = r->route_id;
	s->rule_idx = r->rule_idx;
	/* its own head, if decided below, in the downstream's listener */
	x->s->rl_lport = r->lport;
	/* the connect() binding belonged to this request: spent */
	c->bind_valid = 0;
	/*
	 * Header or query matches decided the downstream route: decide this
	 * leg from its own head (the proxy forwards those too), since another
	 * request with the same content may have taken the key since.
	 */
	if (s->route_id == MM_ROUTE_DEFER)
		emit_head(x, s);
	return true;
}

/* Returns false when the thread had no request to give (route unknown). */
static __always_inline bool inherit_link(struct mm_conn *c,
					 struct mm_pending *s)
{
	struct mm_link *l = NULL;

	/*
	 * A connection opened for a request is bound at connect(); the write
	 * may come in a later event-loop turn, after the thread has read other
	 * requests. A reused keep-alive connection is written in the same turn
	 * that parsed the downstream request, so the thread's link is right.
	 */
	if (c->bind_valid) {
		l = &c->bind;
		c->bind_valid = 0;
	} else {
		l = thread_link(false);
	}
	if (!l || !l->valid) {
		s->route_id = MM_ROUTE_UNKNOWN;
		return false;
	}
	s->parent_conn_id = l->conn_id;
	s->parent_seq = l->seq;
	s->route_gen = l->route_gen;
	s->route_id = l->route_id;
	s->rule_idx = l->rule_idx;
	return true;
}

/*
 * An upstream request no parsed downstream request leads to (the client's
 * leg is TLS, or began before the agent): decide it by its own head, as
 * the proxy forwards Host and path. No route by its own head most likely
 * means the proxy rewrote Host: unknown, not unmatched.
 */
static __always_inline void own_route(struct mm_lctx *x, struct mm_pending *s)
{
	/* no downstream request to take the listener from: every listener */
	__u32 id = route_lookup(x, s->method, 0);

	if (id == MM_ROUTE_UNMATCHED)
		return;
	s->route_id = id;
	s->route_gen = x->s->rl_gen;
	s->rule_idx = x->s->rl_rule_idx;
	if (id == MM_ROUTE_DEFER)
		emit_head(x, s);
}

/*
 * The thread read a request the agent cannot parse (TLS, or not HTTP): an
 * upstream request it writes next is not the last parsed one's.
 */
static __always_inline void thread_link_forget(void)
{
	struct mm_link *l = thread_link(false);

	if (l)
		l->valid = 0;
}

static __always_inline void request_head_done(struct mm_lctx *x)
{
	struct mm_conn *c = x->c;
	struct mm_parser *p = x->p;
	struct mm_pending *s = NULL;

	/* HTTP/1 proved itself: no more looking for HTTP/2 frames */
	c->h2_tries = 16;
	/* an h2c upgrade's head is stream 1 once its 101 comes: kept */
	if (p->up_h2c)
		head_save(x, x->s->b_used);
	/* a request past the pipeline depth has no slot: its route is kept
	 * in the overflow ring by request number */
	if (!c->untracked) {
		s = pipe_newest(c);
	} else if (c->role == MM_ROLE_DOWN) {
		__u32 seq = c->next_seq - 1;
		struct mm_overflow *o = pipe_ovf(c, seq);

		if (o) {
			o->method = method_of(p->tok);
			o->route_id = route_lookup(x, o->method, c->lport);
			o->route_gen = x->s->rl_gen;
			o->rule_idx = x->s->rl_rule_idx;
			/* deferred routes need the head in user space: unknown */
			o->valid = o->seq == seq &&
				   o->route_id != MM_ROUTE_DEFER &&
				   c->untracked <= MM_PIPELINE_DEPTH;
		}
	}
	if (s) {
		s->method = method_of(p->tok);
		if (c->head_trunc) {
			s->flags |= MM_EV_HEAD_TRUNC;
			stat_inc(MM_STAT_HEAD_TRUNC);
		}
		if (c->role == MM_ROLE_UP) {
			if (!link_by_content(x, s) && !inherit_link(c, s))
				own_route(x, s);
		} else {
			s->route_id = route_lookup(x, s->method, c->lport);
			s->route_gen = x->s->rl_gen;
			s->rule_idx = x->s->rl_rule_idx;
			if (s->route_id == MM_ROUTE_DEFER)
				emit_head(x, s);
			set_thread_link(c, &x->s->ra, s);
		}
		/* last: a response read on another CPU pairs with a done head
		 * at once (response_done()), its route must be seen first */
		conn_order(c);
		s->head_done = 1;
	}
	if (p->chunked) {
		p->state = PS_CSIZE;
		p->rem = 0;
	} else if (p->has_cl && !p->cl_bad && p->cl) {
		p->state = PS_BODY;
		p->rem = p->cl;
	} else {
		p->state = PS_START;
	}
}

static __always_inline void response_head_done(struct mm_conn *c,
					       struct mm_parser *p, __u64 now)
{
	struct mm_pending *s = pipe_front(c);
	__u16 status = p->tok;
	bool no_body;

	/* 1xx but 101: interim, the final response follows */
	if (status >= 100 && status < 200 && status != 101) {
		p->state = PS_START;
		return;
	}
	c->status = status;
	/* upgraded to h2c: its request is stream 1 of the decoder's connection */
	if (status == 101 && c->req.up_h2c && c->role == MM_ROLE_DOWN && s &&
	    mm_h2_switch(c, s->start_ns)) {
		pipe_pop(c);
		c->resp_bytes = 0;
		c->status = 0;
		c->resp_started = 0;
		c->req.state = PS_OPAQUE;
		p->state = PS_OPAQUE;
		return;
	}
	if (status == 101) { /* upgraded: no longer HTTP/1 */
		response_done(c, now, 0);
		c->req.state = PS_OPAQUE;
		p->state = PS_OPAQUE;
		return;
	}
	no_body = (s && s->method == MM_M_HEAD) || status == 204 ||
		  status == 304;
	if (no_body) {
		p->state = PS_START;
		response_done(c, now, 0);
	} else if (p->chunked) {
		p->state = PS_CSIZE;
		p->rem = 0;
	} else if (p->has_cl && !p->cl_bad) {
		if (p->cl) {
			p->state = PS_BODY;
			p->rem = p->cl;
		} else {
			p->state = PS_START;
			response_done(c, now, 0);
		}
	} else {
		p->state = PS_CLOSE_BODY;
	}
}

#endif /* MM_EXCHANGE_BPF_H */
