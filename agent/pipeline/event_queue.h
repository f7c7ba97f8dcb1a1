/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Records copied out of the BPF ring buffer by one writer thread and
 * handed, oldest first, to one reader thread. The writer fills a chunk of
 * its own without a lock and makes it visible with event_queue__publish();
 * the reader takes published chunks, oldest first, a bounded number at a
 * time. The ring is emptied as fast as the writer can copy, so a reader
 * busy elsewhere (a large manifest reload, an OTLP export) costs memory
 * here instead of events in the kernel. Bounded: past max_bytes of queued
 * records a record is refused and counted; a small reserve past the bound
 * takes the records that end a connection (event_queue__push_reserved()).
 */
#ifndef MM_AGENT_EVENT_QUEUE_H
#define MM_AGENT_EVENT_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_chunk;

struct event_queue_stats {
	uint64_t queued_bytes; /* records published or filling, not consumed */
	uint64_t peak_bytes;   /* the most queued_bytes ever reached */
	uint64_t dropped;      /* records refused, or dropped by the writer */
	uint64_t records;      /* records handed to the reader */
};

struct event_queue {
	pthread_mutex_t lock;
	struct event_chunk *head, *tail; /* published, oldest first */
	struct event_chunk *fill;        /* the writer's, not yet published */
	struct event_chunk *spare;       /* consumed chunks kept for reuse */
	unsigned int nspare;
	uint64_t max_bytes;
	/*
	 * records: under lock. queued_bytes, peak_bytes, dropped: atomics
	 * (the writer adds, the reader takes off what it consumed).
	 */
	struct event_queue_stats st;
};

/*
 * Past max_bytes, event_queue__push_reserved() may still use this much:
 * room for the few records that say others were lost.
 */
#define EVENT_QUEUE_RESERVE (64u << 10)

void event_queue__init(struct event_queue *q, uint64_t max_bytes);
void event_queue__fini(struct event_queue *q);

/*
 * Writer: copy one record (size > 0). -ENOBUFS when it would take the
 * queue past max_bytes, -ENOMEM when no chunk could be had; both counted
 * in dropped.
 */
int event_queue__push(struct event_queue *q, const void *data, size_t size);
/*
 * The same, allowed EVENT_QUEUE_RESERVE bytes past max_bytes; a refusal
 * is not counted (the caller keeps what it would say and retries).
 */
int event_queue__push_reserved(struct event_queue *q, const void *data,
			       size_t size);

/* Writer: a record it dropped itself, counted with the refused ones. */
void event_queue__count_dropped(struct event_queue *q);

/* Writer: hand what was pushed to the reader. True when there was any. */
bool event_queue__publish(struct event_queue *q);

/*
 * Reader: call fn on the records of at most max_chunks published chunks
 * (64 KiB each; 0: all), in the order pushed, then recycle the chunks.
 * fn's return value is ignored (a record is never retried). Returns how
 * many records were handed over; *more (may be NULL) says whether
 * published chunks are left.
 */
size_t event_queue__consume(struct event_queue *q, unsigned int max_chunks,
			    int (*fn)(void *ctx, void *data, size_t size),
			    void *ctx, bool *more);

void event_queue__stats(struct event_queue *q, struct event_queue_stats *st);
/* Bytes of records pushed and not yet consumed (either thread, no lock). */
uint64_t event_queue__queued_bytes(const struct event_queue *q);

#endif /* MM_AGENT_EVENT_QUEUE_H */
