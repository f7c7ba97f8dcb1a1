/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The copy of a request head that user space gets when it has to finish the
 * request (MM_ROUTE_DEFER: header, query or regex matches, absolute-form
 * targets, long hosts) or that stream 1 of an h2c upgrade starts from. The
 * parser only counts head bytes (c->head_len); the bytes themselves are
 * taken from the window they were parsed in (mm_scratch.buf) when the head
 * ends there, which is where nearly every head ends whole. A head that
 * spans windows (a read cut it, or it is longer than MM_SCRATCH) has the
 * part of each earlier window saved in the connection's mm_conn_ext at that
 * window's end, when it may be needed: the route table can defer
 * (MM_CFG_DEFERS), HTTP2 may upgrade it, or the request line and Host say
 * it may defer by itself (or have not been read yet). Otherwise the gap
 * is noted, and a head that defers all the same (the table changed
 * meanwhile) is reported with its route unknown, flagged truncated.
 */
#ifndef MM_HEAD_COPY_BPF_H
#define MM_HEAD_COPY_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/pipeline.bpf.h"

/*
 * Of the head's bytes so far, how many are the last of buf[0, used) (the
 * window) and how many came before it: a head is contiguous and ends at
 * the parse position. 64-bit all through: a 32-bit value is zero-extended
 * into a new register before a compare, and the bound the compare teaches
 * the verifier misses the copy clang passes on as the size.
 */
static __always_inline __u64 head_in_window(const struct mm_conn *c, __u64 used,
					    __u64 *prev)
{
	__u64 len = c->head_len, part = len < used ? len : used;

	*prev = len - part;
	return part;
}

/* May this head still go to user space whole? */
static __always_inline bool head_may_defer(const struct mm_conn *c,
					   const struct mm_route_acc *a)
{
	__u32 zero = 0;
	struct mm_config *cfg = bpf_map_lookup_elem(&mm_config, &zero);

	if (!cfg || (cfg->flags & (MM_CFG_DEFERS | MM_CFG_HTTP2)))
		return true;
	/*
	 * By itself a request defers with an absolute-form target, a long
	 * host or more dots than dots[] holds; not known before the Host
	 * value has been read.
	 */
	return a->lost || !a->target_ok || !a->host_len ||
	       (c->req.state == PS_VALUE && c->req.hdr == HDR_HOST) ||
	       a->host_state == 3 || a->dots_over;
}

/*
 * The window's part of the head (the last PART of buf[0, used)) to
 * dst[prev...], as far as MM_HEAD_MAX; returns the bytes copied. DST has
 * 2 * MM_HEAD_MAX bytes: with prev < MM_HEAD_MAX and part clamped to
 * MM_HEAD_MAX, that is what lets the verifier bound offset + size (the
 * masks and the clamp only show it bounds the code already keeps).
 */
static __always_inline __u64 head_window_copy(struct mm_lctx *x, char *dst,
					      __u64 prev, __u64 part,
					      __u32 used)
{
	__u64 from = used - part;

	if (prev >= MM_HEAD_MAX)
		return 0;
	if (part > MM_HEAD_MAX - prev)
		part = MM_HEAD_MAX - prev;
	barrier_var(part);
	if (part > MM_HEAD_MAX)
		part = MM_HEAD_MAX;
	barrier_var(prev);
	bpf_probe_read_kernel(dst + (prev & (MM_HEAD_MAX - 1)), part,
			      IDX(x->s->buf, from, MM_SCRATCH));
	return part;
}

/*
 * The window ends inside a request head (its first USED bytes parsed):
 * keep its part of the head for later, or note that it was not kept.
 */
static __always_inline void head_save(struct mm_lctx *x, __u32 used)
{
	struct mm_conn *c = x->c;
	struct mm_conn_ext *e;
	__u64 prev, part = head_in_window(c, used, &prev);

	if (!part || prev >= MM_HEAD_MAX || c->head_gap)
		return;
	if (!head_may_defer(c, &x->s->ra) || !(e = pipe_ext(c, true))) {
		c->head_gap = 1;
		return;
	}
	/* headbuf comes first in struct mm_conn_ext: 2 * MM_HEAD_MAX fit */
	head_window_copy(x, e->headbuf, prev, part, used);
}

/*
 * Copy the whole head, which ends at buf[used], to DST (2 * MM_HEAD_MAX
 * bytes): up to MM_HEAD_MAX of it. Returns the bytes copied, or -1 when
 * earlier windows' bytes were not kept.
 */
static __always_inline int head_copy_out(struct mm_lctx *x, __u32 used,
					 char *dst)
{
	struct mm_conn *c = x->c;
	struct mm_conn_ext *e;
	__u64 prev, part = head_in_window(c, used, &prev);

	if (prev) {
		if (c->head_gap || !(e = pipe_ext(c, false)))
			return -1;
		bpf_probe_read_kernel(dst, MM_HEAD_MAX, e->headbuf);
	}
	if (prev >= MM_HEAD_MAX)
		return MM_HEAD_MAX;
	return prev + head_window_copy(x, dst, prev, part, used);
}

#endif /* MM_HEAD_COPY_BPF_H */
