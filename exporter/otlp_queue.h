/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The export queue: encoded requests waiting to be sent, bounded in bytes.
 * When a new batch does not fit, the oldest batches are dropped first (fresh
 * data is worth more than stale data to a metrics backend) and counted.
 *
 * The sender works on the head in place: claim() marks it in flight, the
 * request is sent without the caller's lock, done() either removes it or
 * leaves it at the head for a retry. A batch dropped for space while in
 * flight is unlinked at once (its bytes no longer count) and freed by done().
 *
 * Not thread-safe: the owner (the sender) serialises calls with its lock.
 */
#ifndef MM_EXPORTER_OTLP_QUEUE_H
#define MM_EXPORTER_OTLP_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct otlp_batch {
	struct otlp_batch *next;
	void *buf;
	size_t len;
	uint32_t attempts; /* sends tried so far; the sender's to update */
	char *header;    /* "Name: value" sent with this batch only, or NULL */
	bool compressed; /* buf already holds the gzip body */
	bool inflight;
	bool dropped; /* dropped while in flight: done() frees it */
};

struct otlp_queue {
	struct otlp_batch *head, *tail;
	size_t max_bytes;
	size_t bytes; /* sum of len over queued batches */
	size_t batches;
	uint64_t dropped_batches;
	uint64_t dropped_bytes;
};

void otlp_queue__init(struct otlp_queue *q, size_t max_bytes);
/* Frees everything still queued (counted as dropped). */
void otlp_queue__fini(struct otlp_queue *q);

/*
 * Append buf (malloc()ed, ownership taken in every case). Returns 0, or
 * -EMSGSIZE when len alone exceeds max_bytes (the batch is dropped and
 * counted), or -ENOMEM.
 */
int otlp_queue__push(struct otlp_queue *q, void *buf, size_t len);

/* The head batch marked in flight, or NULL when empty or already claimed. */
struct otlp_batch *otlp_queue__claim(struct otlp_queue *q);

/*
 * Swap the in-flight batch's body (e.g. for its compressed form), taking
 * ownership of buf and freeing the old one; the queue's byte count follows.
 */
void otlp_queue__replace(struct otlp_queue *q, struct otlp_batch *b, void *buf,
			 size_t len);

/*
 * End the claim: remove (sent, or given up) frees the batch; otherwise it
 * stays at the head for the next attempt. A batch dropped while in flight
 * is freed either way. Returns true when the batch was dropped meanwhile.
 */
bool otlp_queue__done(struct otlp_queue *q, struct otlp_batch *b, bool remove);

#endif /* MM_EXPORTER_OTLP_QUEUE_H */
