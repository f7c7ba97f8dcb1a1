/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP/2 connections fed from BPF (gate HTTP2, bpf/h2_feed.bpf.h): one
 * decoder (agent/h2/conn.c) per connection id, fed with MM_EVT_H2_DATA in
 * order, ended by MM_EVT_H2_CLOSE. Each finished stream becomes an exchange
 * like an HTTP/1 one, with an HTTP/1 request head built from its fields
 * (":method :path", ":authority" as Host, the other request fields) so
 * routes are matched by the same user-space matcher as deferred heads. No
 * libbpf: unit-tested with recorded bytes.
 */
#ifndef MM_AGENT_H2_FEED_H
#define MM_AGENT_H2_FEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/pipeline/exchange.h"
#include "bpf/milometer.h"

/*
 * One exchange: e->route_id is MM_ROUTE_DEFER (decide from head) or
 * MM_ROUTE_UNKNOWN (the decoder could not resolve method, path or
 * authority); trunc: head may lack request fields.
 */
typedef void (*h2_feed_exchange_fn)(void *ctx, const struct exchange *e,
				    const char *head, size_t head_len,
				    bool trunc);

/*
 * MM_EVT_H2_CLOSE flag the agent's own queue sets, never BPF
 * (agent/pipeline/event_intake.c): a record of the connection was lost
 * there. Its decoder ends as on MM_DATA_LOST and the connection's later
 * bytes are ignored until BPF's close, as BPF ignores a connection it
 * lost bytes of: a decoder cannot find frame boundaries past a gap.
 */
#define H2_FEED_GAP 0x80
_Static_assert(!(H2_FEED_GAP &
		 (MM_DATA_FROM_START | MM_DATA_LOST | MM_DATA_UPGRADE)),
	       "H2_FEED_GAP is not a flag BPF sets");

struct h2_feed_stats {
	uint64_t conns; /* connections followed so far */
	uint64_t open;  /* followed now */
	uint64_t exchanges;
	uint64_t unknown;      /* exchanges whose route fields were unknown */
	uint64_t lost_conns;   /* feeds stopped: bytes lost (BPF, queue) */
	uint64_t lost_streams; /* open streams of those: not counted */
	uint64_t not_h2;       /* connections the decoder refused */
};

struct h2_feed;

struct h2_feed *h2_feed__new(h2_feed_exchange_fn fn, void *ctx);
/* Forgets every connection (its open streams are not counted). */
void h2_feed__free(struct h2_feed *f, uint64_t now_ns);
/* MM_EVT_H2_DATA or MM_EVT_H2_CLOSE; other events are ignored. */
int h2_feed__event(struct h2_feed *f, const void *data, size_t size);
void h2_feed__stats(const struct h2_feed *f, struct h2_feed_stats *st);
/*
 * Forget connections with no bytes for idle_ns (CLOCK_MONOTONIC, as BPF
 * stamps them): their close was lost (a full ring buffer) or never sent (the
 * TLS object went away with the gate). Their open streams count as lost.
 */
uint64_t h2_feed__expire(struct h2_feed *f, uint64_t now_ns, uint64_t idle_ns);

#endif /* MM_AGENT_H2_FEED_H */
