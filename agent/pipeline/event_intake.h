/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What the ring buffer's reader does with each record before the queue
 * (agent/pipeline/event_queue.h) takes it: a head record without the
 * padding of its fixed-size ring reservation, and an HTTP/2 connection
 * whose record the full queue refused ended as lost, then picked up again
 * midway, so its decoder never reads across a gap. The reader thread's
 * own: no lock.
 */
#ifndef MM_AGENT_EVENT_INTAKE_H
#define MM_AGENT_EVENT_INTAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_queue;

/* HTTP/2 connections with a gap, kept until their next record is queued */
#define EVENT_INTAKE_MAX_GAPS 256

struct event_intake_gap {
	uint64_t conn_id;
	uint64_t ts_ns;
	bool close_sent; /* its lost close is queued */
};

struct event_intake {
	struct event_queue *q;
	struct event_intake_gap gaps[EVENT_INTAKE_MAX_GAPS];
	unsigned int ngaps;
};

/* One record from the ring buffer into the queue (or counted as lost). */
void event_intake__record(struct event_intake *in, const void *data,
			  size_t size);

/* After a batch: queue the lost closes the queue had no room for yet. */
void event_intake__retry(struct event_intake *in);

#endif /* MM_AGENT_EVENT_INTAKE_H */
