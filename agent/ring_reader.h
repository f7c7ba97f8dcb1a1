/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The BPF ring buffer read on a thread of its own: every record is copied
 * into a user-space queue (agent/pipeline/event_queue.h) as soon as the
 * kernel wakes the thread or 50 ms pass; the event loop takes them every
 * 50 ms, or sooner through an eventfd when many wait. The event loop handles the records when it is free:
 * its housekeeping (manifest reloads, target scans, OTLP encoding) may
 * take longer than the ring takes to fill under load, and an event it has
 * not read yet no longer costs a dropped record in the kernel.
 */
#ifndef MM_AGENT_RING_READER_H
#define MM_AGENT_RING_READER_H

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
 * Readable (EPOLLIN) when a 32nd of the queue's bound waits for
 * ring_reader__drain(), or more than one drain takes: below that the
 * event loop drains on its own every 50 ms.
 */
int ring_reader__fd(const struct ring_reader *rr);

/*
 * On the event loop: hand queued records to fn in the order BPF wrote
 * them, at most 1 MiB of them (the fd stays readable while more wait).
 * Returns how many.
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
