/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * A request head's struct mm_route_acc (conn.bpf.h) between the reads it
 * spans. The parser keeps it in the per-CPU mm_scratch, which the next I/O
 * of another socket on this CPU overwrites: an I/O that ends inside a head
 * copies it to the connection's mm_route_accs entry, and the connection's
 * next request I/O copies it back (capture_io()). Heads nearly always come
 * in one read, so most sockets do without those 288 bytes. A connection
 * whose heads are cut (heads longer than a TCP segment: big cookies) keeps
 * its entry until it ends: made and freed per head, it cost ~500 ns more
 * per request than two lookups and copies. With nowhere to put it (the map
 * full) the head is finished in user space from its copy (head_copy.bpf.h),
 * or reported with its route unknown when that was not kept either;
 * counted.
 */
#ifndef MM_ROUTE_ACC_BPF_H
#define MM_ROUTE_ACC_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/conn.bpf.h"
#include "bpf/maps.bpf.h"

#define RA_SAVED 1 /* c->ra_saved: in mm_route_accs */
#define RA_LOST  2 /* c->ra_saved: kept nowhere */

/* A head starts: nothing said yet. */
static __always_inline void route_acc_reset(struct mm_route_acc *a)
{
	a->path_hash = MM_FNV_OFFSET;
	a->host_hash = MM_FNV_OFFSET;
	a->nbounds = 0;
	a->host_len = 0;
	a->host_state = 0;
	a->ndots = 0;
	a->dots_over = 0;
	a->target_ok = 0;
	a->lost = 0;
}

/* The connection ends, or its requests stop being parsed (101, h2). */
static __always_inline void route_acc_drop(struct mm_conn *c)
{
	__u64 id = c->conn_id;

	c->ra_saved = 0;
	/*
	 * No store to ra_held unless it was set: a closer's 0 landing after a
	 * parser's 1 (conn_fence()) would hide the entry from both.
	 */
	if (!c->ra_held)
		return;
	bpf_map_delete_elem(&mm_route_accs, &id);
	c->ra_held = 0;
}

/* The I/O ends inside a request head: keep what it said so far. */
static __always_inline void route_acc_save(struct mm_lctx *x)
{
	struct mm_conn *c = x->c;
	struct mm_route_acc *a = &x->s->ra, *e;
	/* on the stack: 6.1 takes no key from a global function's argument */
	__u64 id = c->conn_id;

	/* closed meanwhile (on another CPU): nothing would delete it */
	if (c->finished)
		return;
	if (c->ra_held) {
		e = bpf_map_lookup_elem(&mm_route_accs, &id);
		/* missing only when a close on another CPU deleted it */
		if (e) {
			*e = *a;
			c->ra_saved = RA_SAVED;
		}
		return;
	}
	if (bpf_map_update_elem(&mm_route_accs, &id, a, BPF_ANY)) {
		if (!a->lost)
			stat_inc(MM_STAT_ROUTE_STATE_LOST);
		c->ra_saved = RA_LOST;
		return;
	}
	c->ra_held = 1;
	c->ra_saved = RA_SAVED;
	/* closed meanwhile on another CPU, its drop before our ra_held? */
	conn_fence(c);
	if (c->finished)
		route_acc_drop(c);
}

/* A request I/O of a connection whose head went on past its last one. */
static __always_inline void route_acc_load(struct mm_lctx *x)
{
	struct mm_conn *c = x->c;
	struct mm_route_acc *a = &x->s->ra, *saved = NULL;
	__u64 id = c->conn_id;

	/* RA_SAVED only with an entry: drop clears both */
	if (c->ra_saved == RA_SAVED)
		saved = bpf_map_lookup_elem(&mm_route_accs, &id);
	c->ra_saved = 0;
	if (saved) {
		*a = *saved;
		return;
	}
	/* kept nowhere (or, not reached, deleted meanwhile) */
	route_acc_reset(a);
	a->lost = 1;
}

#endif /* MM_ROUTE_ACC_BPF_H */
