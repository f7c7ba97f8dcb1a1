/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Request/response bookkeeping of one connection: the pipeline of requests
 * awaiting responses, what happens at the end of a head or a message, and
 * the events sent to user space.
 */
#ifndef MM_EXCHANGE_BPF_H
#define MM_EXCHANGE_BPF_H

#include "bpf/conn.bpf.h"
#include "bpf/route_lookup.bpf.h"

static __always_inline struct mm_pending *front_slot(struct mm_conn *c)
{
	return c->count ? IDX(c->slots, c->head, MM_PIPELINE_DEPTH) : NULL;
}

static __always_inline struct mm_pending *newest_slot(struct mm_conn *c)
{
	return c->count ? IDX(c->slots, c->head + c->count - 1, MM_PIPELINE_DEPTH) :
			  NULL;
}

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
			       mm_wakeup_bytes ?
		       BPF_RB_FORCE_WAKEUP :
		       BPF_RB_NO_WAKEUP;
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
	e->tgid = bpf_get_current_pid_tgid() >> 32;
	e->route_gen = s->route_gen;
	e->route_id = s->route_id;
	e->rule_idx = s->rule_idx;
	e->_pad0 = 0;
	e->req_seq = s->seq;
	e->parent_seq = s->parent_seq;
	e->conn_id = c->conn_id;
	e->parent_conn_id = s->parent_conn_id;
	e->start_ns = s->start_ns;
	e->end_ns = 0;
	e->req_bytes = s->req_bytes;
	e->resp_bytes = 0;
}

static __always_inline void emit_exchange(struct mm_conn *c, struct mm_pending *s,
					  __u64 end_ns, __u8 flags)
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

static __always_inline void emit_head(struct mm_conn *c, struct mm_pending *s)
{
	struct mm_http_event *e;
	__u32 len = c->head_len;

	e = bpf_ringbuf_reserve(&mm_events, sizeof(*e) + MM_HEAD_MAX, 0);
	if (!e) {
		stat_inc(MM_STAT_RINGBUF_FULL);
		return;
	}
	fill_event(e, c, s, MM_EVT_HEAD);
	if (len > MM_HEAD_MAX)
		len = MM_HEAD_MAX;
	e->head_len = len;
	bpf_probe_read_kernel(e->head, MM_HEAD_MAX, c->headbuf);
	bpf_ringbuf_submit(e, submit_flags());
	stat_inc(MM_STAT_EVENTS);
	stat_inc(MM_STAT_DEFERRED);
}

/* The response to the front request is complete: report it, pop it. */
static __always_inline void response_done(struct mm_conn *c, __u64 end_ns,
					  __u8 flags)
{
	struct mm_pending *s = front_slot(c);

	if (s) {
		emit_exchange(c, s, end_ns, flags);
		c->head = (c->head + 1) & (MM_PIPELINE_DEPTH - 1);
		c->count--;
	} else if (c->untracked) {
		c->untracked--;
		stat_inc(MM_STAT_PIPELINE_FULL);
	}
	c->resp_bytes = 0;
	c->status = 0;
	c->resp_started = 0;
}

/* Connection gone: close-delimited body ends, the rest was aborted. */
static __always_inline void conn_finish(struct mm_conn *c, __u64 now)
{
	if (c->resp.state == PS_CLOSE_BODY)
		response_done(c, c->last_resp_ns, MM_EV_CLOSE_DELIM);
#pragma unroll
	for (int i = 0; i < MM_PIPELINE_DEPTH; i++) {
		struct mm_pending *s = front_slot(c);

		if (!s)
			break;
		/*
		 * Includes a request whose head never ended: the client gave
		 * up mid-request (nginx logs it as 400). Its route is unknown.
		 */
		response_done(c, now,
			      MM_EV_ABORTED |
				      (c->resp_started ? 0 : MM_EV_NO_RESPONSE));
	}
}

/*
 * The request stream stopped being HTTP: the request it was parsing is not
 * an exchange (the proxy's 400 to it is not one either), and responses can
 * no longer be paired once nothing valid is pending.
 */
static __always_inline void request_garbage(struct mm_conn *c)
{
	struct mm_pending *s = c->untracked ? NULL : newest_slot(c);

	if (c->untracked)
		c->untracked--;
	else if (s && !s->head_done)
		c->count--;
	if (!c->count)
		c->resp.state = PS_OPAQUE;
}

static __always_inline void recent_key(struct mm_conn *c, __u8 method,
				       struct mm_recent_key *k)
{
	k->tgid = bpf_get_current_pid_tgid() >> 32;
	k->method = method;
	k->host_hash = c->host_hash;
	k->path_hash = c->path_hash;
}

static __always_inline void set_thread_link(struct mm_conn *c,
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
	struct mm_link *tl;

	tl = bpf_task_storage_get(&mm_thread_req, bpf_get_current_task_btf(),
				  0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (tl)
		*tl = l;
	recent_key(c, s->method, &k);
	bpf_map_update_elem(&mm_recent, &k, &l, BPF_ANY);
}

/*
 * Which downstream request an upstream request serves. First by content:
 * haproxy and Envoy forward Host, path and method unchanged, but may write
 * the upstream request turns later from another thread. When the proxy
 * rewrote Host (nginx's default proxy_pass), by thread: see inherit_link().
 * Returns false when there was no content match.
 */
static __always_inline bool link_by_content(struct mm_conn *c,
					    struct mm_pending *s)
{
	struct mm_recent_key k = {};
	struct mm_link *l;

	recent_key(c, s->method, &k);
	l = bpf_map_lookup_elem(&mm_recent, &k);
	if (!l)
		return false;
	s->parent_conn_id = l->conn_id;
	s->parent_seq = l->seq;
	s->route_gen = l->route_gen;
	s->route_id = l->route_id;
	s->rule_idx = l->rule_idx;
	/* the connect() binding belonged to this request: spent */
	c->bind_valid = 0;
	/*
	 * Header or query matches decided the downstream route: decide this
	 * leg from its own head (the proxy forwards those too), since another
	 * request with the same content may have taken the key since.
	 */
	if (s->route_id == MM_ROUTE_DEFER)
		emit_head(c, s);
	return true;
}

static __always_inline void inherit_link(struct mm_conn *c, struct mm_pending *s)
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
		l = bpf_task_storage_get(&mm_thread_req,
					 bpf_get_current_task_btf(), 0, 0);
	}
	if (!l || !l->valid) {
		s->route_id = MM_ROUTE_UNKNOWN;
		return;
	}
	s->parent_conn_id = l->conn_id;
	s->parent_seq = l->seq;
	s->route_gen = l->route_gen;
	s->route_id = l->route_id;
	s->rule_idx = l->rule_idx;
}

static __always_inline void request_head_done(struct mm_conn *c,
					      struct mm_parser *p)
{
	struct mm_pending *s = NULL;
	struct mm_route_res res = {};

	/* a request past the pipeline depth has no slot: parse only */
	if (!c->untracked)
		s = newest_slot(c);
	if (s) {
		s->method = method_of(p->tok);
		s->head_done = 1;
		if (c->head_trunc) {
			s->flags |= MM_EV_HEAD_TRUNC;
			stat_inc(MM_STAT_HEAD_TRUNC);
		}
		if (c->role == MM_ROLE_UP) {
			if (!link_by_content(c, s))
				inherit_link(c, s);
		} else {
			s->route_id = route_lookup(c, s->method, &res);
			s->route_gen = res.gen;
			s->rule_idx = res.rule_idx;
			if (s->route_id == MM_ROUTE_DEFER)
				emit_head(c, s);
			set_thread_link(c, s);
		}
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
	struct mm_pending *s = front_slot(c);
	__u16 status = p->tok;
	bool no_body;

	/* 1xx but 101: interim, the final response follows */
	if (status >= 100 && status < 200 && status != 101) {
		p->state = PS_START;
		return;
	}
	c->status = status;
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
