/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF ring buffer, read by the event loop while it is free and by a
 * thread of its own while the loop is busy (ring_reader__busy(): a
 * manifest reload, target scans, OTLP encoding) or has not drained for
 * 200 ms. The thread copies the records into a user-space queue
 * (agent/pipeline/event_queue.h), which the loop's next drain hands over
 * first, so the order holds. Housekeeping that outlasts the ring costs
 * queue memory, not events; while the loop is free a record is read once,
 * by one thread, as before the thread existed.
 */
#ifndef MM_AGENT_RING_READER_H
#define MM_AGENT_RING_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/pipeline/event_intake.h"
#include "agent/pipeline/event_queue.h"

struct ring_reader;

/*
 * Start reading the ring buffer map map_fd; queue_bytes bounds the
 * records held in user space. NULL with *err = -errno and a message.
 */
struct ring_reader *ring_reader__start(int map_fd, uint64_t queue_bytes,
				       int *err);

/*
 * For the loop's epoll, both: readable (EPOLLIN) when the thread queued
 * records, or more wait than one drain takes; the ring's own epoll fd
 * (BPF wakes it at 1/8 full; the loop also drains every 50 ms).
 */
int ring_reader__fd(const struct ring_reader *rr);
int ring_reader__ring_fd(const struct ring_reader *rr);

/* The loop is busy (true) or free again (false): who reads the ring. */
void ring_reader__busy(struct ring_reader *rr, bool busy);

/*
 * On the event loop: hand records to fn in the order BPF wrote them, the
 * queued ones (at most 1 MiB; the fd stays readable while more wait),
 * then, when none are left, the ring's straight. Returns how many.
 */
size_t ring_reader__drain(struct ring_reader *rr,
			  int (*fn)(void *ctx, void *data, size_t size),
			  void *ctx);

/*
 * Stop the thread once it has copied what the ring holds now: drains
 * after this, until one returns 0, see every record written before the
 * call (that the queue had room for).
 */
void ring_reader__stop(struct ring_reader *rr);
void ring_reader__free(struct ring_reader *rr);

void ring_reader__stats(struct ring_reader *rr, struct event_queue_stats *st);

#endif /* MM_AGENT_RING_READER_H */
