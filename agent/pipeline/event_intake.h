/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the ring buffer's reader does with each record before the queue
 * (agent/pipeline/event_queue.h) takes it: a head record goes without the
 * padding of its fixed-size ring reservation; an HTTP/2 connection whose
 * record the full queue refused gets a close marked as a gap
 * (H2_FEED_GAP), from the queue's reserve, before anything else of it,
 * so its decoder ends there instead of reading across the gap. The
 * reader thread's own: no lock.
 */
#ifndef MM_AGENT_EVENT_INTAKE_H
#define MM_AGENT_EVENT_INTAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_queue;

/* a connection whose gap close the reserve had no room for yet */
struct event_intake_gap {
	uint64_t conn_id;
	uint64_t ts_ns;
	bool closed; /* BPF's close came meanwhile (and was dropped) */
};

struct event_intake {
	struct event_queue *q;
	struct event_intake_gap *gaps; /* grows; empty but under a full reserve */
	unsigned int ngaps, cap;
};

/* One record from the ring buffer into the queue (or counted as lost). */
void event_intake__record(struct event_intake *in, const void *data,
			  size_t size);

/* After a batch: queue the gap closes the reserve had no room for. */
void event_intake__retry(struct event_intake *in);

void event_intake__fini(struct event_intake *in);

#endif /* MM_AGENT_EVENT_INTAKE_H */
