/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Requests whose route BPF left to user space, by (connection, request
 * number): resolved when their head event arrives, read by the exchange
 * events of both legs, dropped with the downstream exchange (or after an
 * idle limit, if an exchange event was lost). Open addressing, linear
 * probing, backward-shift deletion; grows, so concurrency never makes two
 * requests share an entry.
 */
#ifndef MM_AGENT_DEFERRED_H
#define MM_AGENT_DEFERRED_H

#include <stdint.h>

struct deferred {
	uint64_t conn_id; /* 0: empty */
	uint32_t seq;
	uint32_t gen;
	uint32_t route_id;
	uint16_t rule_idx;
	uint16_t _pad;
	uint64_t at_ns;
};

struct deferred_tab;

struct deferred_tab *deferred__new(void);
void deferred__free(struct deferred_tab *t);
/* Insert or replace; -ENOMEM only when the table cannot grow. */
int deferred__put(struct deferred_tab *t, const struct deferred *d);
const struct deferred *deferred__get(const struct deferred_tab *t,
				     uint64_t conn_id, uint32_t seq);
void deferred__del(struct deferred_tab *t, uint64_t conn_id, uint32_t seq);
/* Drop entries older than max_age_ns; returns how many. */
uint64_t deferred__expire(struct deferred_tab *t, uint64_t now_ns,
			  uint64_t max_age_ns);
uint64_t deferred__count(const struct deferred_tab *t);

#endif /* MM_AGENT_DEFERRED_H */
