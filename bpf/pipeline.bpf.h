/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The pipeline of one connection: the requests whose responses have not
 * ended, oldest first, up to MM_PIPELINE_DEPTH. Nearly every connection has
 * one in flight, so struct mm_conn holds a ring of MM_SLOTS_INLINE slots:
 * with n <= MM_SLOTS_INLINE requests they are slots[head .. head+n-1]; with
 * more, slots[head .. head+2] hold the three oldest, slots[head+3] the
 * newest, and the ones between wait in order in struct mm_conn_ext's ring
 * (xhead, xcount), made the first time a connection pipelines that deep.
 * The parser and the exchange code only touch the oldest (responses) and the
 * newest (the request being read), so they keep plain pointers into mm_conn;
 * a request past MM_SLOTS_INLINE costs one slot copy in and one out.
 */
#ifndef MM_PIPELINE_BPF_H
#define MM_PIPELINE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"

/* inline slots that hold the oldest requests once the middle is in use */
#define MM_FRONT_INLINE (MM_SLOTS_INLINE - 1)

static __always_inline struct mm_pending *pipe_front(struct mm_conn *c)
{
	return c->count ? IDX(c->slots, c->head, MM_SLOTS_INLINE) : NULL;
}

static __always_inline struct mm_pending *pipe_newest(struct mm_conn *c)
{
	__u32 n = c->count < MM_SLOTS_INLINE ? c->count : MM_SLOTS_INLINE;

	return c->count ? IDX(c->slots, c->head + n - 1, MM_SLOTS_INLINE)
			: NULL;
}

/* The connection is done with its pipeline: give its mm_conn_ext back. */
static __always_inline void pipe_free(struct mm_conn *c)
{
	__u64 id = c->conn_id;

	if (!c->has_ext)
		return;
	bpf_map_delete_elem(&mm_conn_exts, &id);
	c->has_ext = 0;
	c->xcount = 0;
}

/* The connection's mm_conn_ext; made (zeroed) when create and none yet. */
static __always_inline struct mm_conn_ext *pipe_ext(struct mm_conn *c,
						    bool create)
{
	/* on the stack: 6.1 takes no key from a global function's argument */
	__u64 id = c->conn_id;
	struct mm_conn_ext *init;
	__u32 zero = 0;

	if (c->has_ext)
		return bpf_map_lookup_elem(&mm_conn_exts, &id);
	if (!create)
		return NULL;
	init = bpf_map_lookup_elem(&mm_conn_ext_zero, &zero);
	if (!init || bpf_map_update_elem(&mm_conn_exts, &id, init, BPF_NOEXIST))
		return NULL;
	c->has_ext = 1;
	/* closed meanwhile on another CPU: it may not have seen has_ext */
	conn_fence(c);
	if (c->finished) {
		pipe_free(c);
		return NULL;
	}
	return bpf_map_lookup_elem(&mm_conn_exts, &id);
}

/*
 * A zeroed slot for a new request at the end of the pipeline (the caller
 * keeps count below MM_PIPELINE_DEPTH); NULL when the middle has nowhere to
 * go (mm_conn_exts full): the request is then reported untracked.
 */
static __always_inline struct mm_pending *pipe_push(struct mm_conn *c)
{
	struct mm_pending *s;

	if (c->count >= MM_SLOTS_INLINE) {
		struct mm_conn_ext *e = pipe_ext(c, true);

		if (!e)
			return NULL;
		/* the newest so far joins the middle */
		s = IDX(c->slots, c->head + MM_FRONT_INLINE, MM_SLOTS_INLINE);
		*IDX(e->slots, c->xhead + c->xcount, MM_PIPELINE_DEPTH) = *s;
		c->xcount++;
	} else {
		s = IDX(c->slots, c->head + c->count, MM_SLOTS_INLINE);
	}
	__builtin_memset(s, 0, sizeof(*s));
	c->count++;
	return s;
}

/* The oldest request is answered: the oldest of the middle moves up. */
static __always_inline void pipe_pop(struct mm_conn *c)
{
	struct mm_pending *s;

	if (!c->count)
		return;
	c->head = (c->head + 1) & (MM_SLOTS_INLINE - 1);
	c->count--;
	if (c->xcount) {
		struct mm_conn_ext *e = pipe_ext(c, false);

		/* the newest into the slot just freed, behind it the middle's oldest */
		s = IDX(c->slots, c->head + MM_FRONT_INLINE - 1,
			MM_SLOTS_INLINE);
		*IDX(c->slots, c->head + MM_FRONT_INLINE, MM_SLOTS_INLINE) = *s;
		if (e) {
			*s = *IDX(e->slots, c->xhead, MM_PIPELINE_DEPTH);
		} else { /* not reached: has_ext is set before xcount grows */
			__builtin_memset(s, 0, sizeof(*s));
			s->route_id = MM_ROUTE_UNKNOWN;
		}
		c->xhead = (c->xhead + 1) & (MM_PIPELINE_DEPTH - 1);
		c->xcount--;
	}
	/*
	 * An empty pipeline starts again at slot 0: keep-alive traffic then
	 * reuses one cache line instead of cycling through all.
	 */
	if (!c->count)
		c->head = 0;
}

/* The newest request was no request after all: the middle's newest moves up. */
static __always_inline void pipe_drop_newest(struct mm_conn *c)
{
	if (!c->count)
		return;
	if (c->xcount) {
		struct mm_conn_ext *e = pipe_ext(c, false);
		struct mm_pending *s = IDX(c->slots, c->head + MM_FRONT_INLINE,
					   MM_SLOTS_INLINE);

		c->xcount--;
		if (e)
			*s = *IDX(e->slots, c->xhead + c->xcount,
				  MM_PIPELINE_DEPTH);
	}
	c->count--;
}

/*
 * Where an untracked request (past MM_PIPELINE_DEPTH) keeps its start and
 * route, by request number; NULL without an mm_conn_ext (it is then only
 * counted, route unknown).
 */
static __always_inline struct mm_overflow *pipe_ovf(struct mm_conn *c,
						    __u32 seq)
{
	struct mm_conn_ext *e = pipe_ext(c, false);

	return e ? IDX(e->ovf, seq, MM_PIPELINE_DEPTH) : NULL;
}

#endif /* MM_PIPELINE_BPF_H */
