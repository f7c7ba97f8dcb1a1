/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One finished (or aborted) HTTP exchange as user space counts it. The
 * HTTP/1 path converts BPF's MM_EVT_EXCHANGE record (struct mm_http_event,
 * the kernel ABI) into it once, as the ring buffer hands it over; the
 * HTTP/2 path (h2_feed.c) builds it from a decoded stream, with what only
 * user space can know (the gRPC status of the trailers). Kept apart from the
 * ABI so that a user-space field never changes what BPF writes.
 */
#ifndef MM_AGENT_EXCHANGE_H
#define MM_AGENT_EXCHANGE_H

#include <stdint.h>

struct mm_http_event;

#define EXCHANGE_GRPC_NONE (-1) /* no grpc-status: not gRPC or no trailers */

struct exchange {
	uint8_t leg;         /* enum mm_leg */
	uint8_t method;      /* enum mm_method */
	uint8_t flags;       /* MM_EV_* */
	uint8_t rule_idx;    /* within route_id */
	uint8_t gw;          /* gateway slot: the route table of route_id */
	uint16_t status;     /* final status; 0 when aborted before one */
	int16_t grpc_status; /* EXCHANGE_GRPC_NONE or 0..16 (HTTP/2 trailers) */
	uint32_t tgid;
	uint32_t route_gen;
	uint32_t route_id;   /* or MM_ROUTE_* */
	uint32_t req_seq;    /* request (HTTP/2: stream) on this connection */
	uint32_t parent_seq; /* upstream leg: the downstream request it serves */
	uint64_t conn_id;
	uint64_t parent_conn_id; /* upstream leg: its downstream connection */
	uint64_t start_ns;
	uint64_t end_ns;
	uint64_t req_bytes;
	uint64_t resp_bytes;
};

/* An MM_EVT_EXCHANGE record from BPF, which knows no gRPC status. */
void exchange__from_event(struct exchange *x, const struct mm_http_event *e);

#endif /* MM_AGENT_EXCHANGE_H */
