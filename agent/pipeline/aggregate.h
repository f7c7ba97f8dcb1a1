/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Ring-buffer events -> Envoy-named source metrics in the store, and through
 * the policy engine's bindings -> target metrics. Per event: one hash
 * lookup on a packed (generation, route, rule, method, status, leg) key and
 * a few increments; labels are built once per series, when the key is new.
 * Requests BPF deferred are finished here from their captured head.
 */
#ifndef MM_AGENT_AGGREGATE_H
#define MM_AGENT_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct mstore;
struct route_table;
struct policy_engine;
struct exchange;

struct aggregate;

struct aggregate_stats {
	uint64_t events;
	uint64_t exchanges;
	uint64_t heads;
	uint64_t deferred_resolved; /* finished in user space */
	uint64_t deferred_unknown;  /* head lost or unparseable */
	uint64_t deferred_expired; /* resolved heads whose exchange never came */
	uint64_t retired_gen;      /* event of a generation no longer held */
	uint64_t aborted;
	uint64_t unknown_upstream; /* upstream leg with no downstream link */
	uint64_t keys;             /* distinct series keys cached */
};

/*
 * The route table of generation gen, NULL when retired: the agent passes
 * route_sync's tables; tests pass tables compiled from manifests (this is
 * what keeps aggregate.c free of libbpf, so it is unit-tested).
 */
typedef const struct route_table *(*aggregate_table_fn)(void *ctx,
							uint32_t gen);

struct aggregate *aggregate__new(struct mstore *store, aggregate_table_fn table,
				 void *table_ctx, bool export_sources);
void aggregate__free(struct aggregate *a);
/* The policy engine whose bindings target series come from (may be NULL). */
void aggregate__set_engine(struct aggregate *a, struct policy_engine *pe);
/*
 * Time stamp for the series updated by the next events (CLOCK_REALTIME ns):
 * one clock read per drained batch, not per event. 0: read per event.
 */
void aggregate__set_now(struct aggregate *a, uint64_t now_ns);
/* Store lock held. Handles one ring-buffer record. */
int aggregate__event(struct aggregate *a, const void *data, size_t size);
/*
 * An exchange whose request head user space has (HTTP/2 streams): with
 * e->route_id MM_ROUTE_DEFER the route comes from head (trunc: fields may be
 * missing, so a route that needs them is unknown), else as e says.
 */
void aggregate__exchange_head(struct aggregate *a, const struct exchange *e,
			      const char *head, size_t len, bool trunc);
/* Store lock held. Drop keys idle longer than idle_ns, stale bindings. */
void aggregate__maintain(struct aggregate *a, uint64_t now_ns,
			 uint64_t idle_ns);
void aggregate__stats(const struct aggregate *a, struct aggregate_stats *st);
/* The Markdown reference of the source metrics (metric_doc). Returns 0 or -errno. */
int aggregate__write_reference(FILE *out);

#endif /* MM_AGENT_AGGREGATE_H */
