// SPDX-License-Identifier: Apache-2.0
/* Byte-bounded FIFO of encoded OTLP requests; see otlp_queue.h. */
#include <errno.h>
#include <stdlib.h>

#include "exporter/otlp_queue.h"

void otlp_queue__init(struct otlp_queue *q, size_t max_bytes)
{
	*q = (struct otlp_queue){ .max_bytes = max_bytes };
}

static void batch_free(struct otlp_batch *b)
{
	free(b->header);
	free(b->buf);
	free(b);
}

/* Unlink the head; an in-flight head is only marked, done() frees it. */
static void drop_head(struct otlp_queue *q)
{
	struct otlp_batch *b = q->head;

	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= b->len;
	q->batches--;
	q->dropped_batches++;
	q->dropped_bytes += b->len;
	b->next = NULL;
	if (b->inflight)
		b->dropped = true;
	else
		batch_free(b);
}

void otlp_queue__fini(struct otlp_queue *q)
{
	while (q->head)
		drop_head(q);
}

int otlp_queue__push(struct otlp_queue *q, void *buf, size_t len)
{
	struct otlp_batch *b;

	if (len > q->max_bytes) {
		q->dropped_batches++;
		q->dropped_bytes += len;
		free(buf);
		return -EMSGSIZE;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		q->dropped_batches++;
		q->dropped_bytes += len;
		free(buf);
		return -ENOMEM;
	}
	b->buf = buf;
	b->len = len;
	while (q->head && q->bytes + len > q->max_bytes)
		drop_head(q);
	if (q->tail)
		q->tail->next = b;
	else
		q->head = b;
	q->tail = b;
	q->bytes += len;
	q->batches++;
	return 0;
}

struct otlp_batch *otlp_queue__claim(struct otlp_queue *q)
{
	if (!q->head || q->head->inflight)
		return NULL;
	q->head->inflight = true;
	return q->head;
}

void otlp_queue__replace(struct otlp_queue *q, struct otlp_batch *b, void *buf,
			 size_t len)
{
	if (!b->dropped)
		q->bytes = q->bytes - b->len + len;
	free(b->buf);
	b->buf = buf;
	b->len = len;
}

bool otlp_queue__done(struct otlp_queue *q, struct otlp_batch *b, bool remove)
{
	if (b->dropped) {
		batch_free(b);
		return true;
	}
	b->inflight = false;
	if (!remove)
		return false;
	/* An undropped in-flight batch is always the head. */
	q->head = b->next;
	if (!q->head)
		q->tail = NULL;
	q->bytes -= b->len;
	q->batches--;
	batch_free(b);
	return false;
}
