// SPDX-License-Identifier: Apache-2.0
#include "agent/pipeline/exchange.h"
#include "bpf/milometer.h"

void exchange__from_event(struct exchange *x, const struct mm_http_event *e)
{
	*x = (struct exchange){
		.leg = e->leg,
		.method = e->method,
		.flags = e->flags,
		.rule_idx = e->rule_idx,
		.gw = e->gw,
		.status = e->status,
		.grpc_status = EXCHANGE_GRPC_NONE,
		.tgid = e->tgid,
		.route_gen = e->route_gen,
		.route_id = e->route_id,
		.req_seq = e->req_seq,
		.parent_seq = e->parent_seq,
		.conn_id = e->conn_id,
		.parent_conn_id = e->parent_conn_id,
		.start_ns = e->start_ns,
		.end_ns = e->end_ns,
		.req_bytes = e->req_bytes,
		.resp_bytes = e->resp_bytes,
	};
}
