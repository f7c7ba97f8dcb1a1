// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/pipeline/event_queue.h"

/* below glibc's mmap threshold: a chunk comes from the heap, not a syscall */
#define CHUNK_BYTES (64u << 10)
/* consumed chunks kept for the next burst (1 MiB); the rest are freed */
#define MAX_SPARE 16u

struct event_chunk {
	struct event_chunk *next;
	size_t len; /* bytes of records */
	size_t cap;
	/* records: a uint32_t size, then the bytes, each 8-byte aligned */
	uint64_t data[];
};

#define REC_HDR 8u

static size_t rec_bytes(size_t size)
{
	return REC_HDR + ((size + 7) & ~(size_t)7);
}

static uint64_t load(const uint64_t *v)
{
	return __atomic_load_n(v, __ATOMIC_RELAXED);
}

void event_queue__init(struct event_queue *q, uint64_t max_bytes)
{
	memset(q, 0, sizeof(*q));
	pthread_mutex_init(&q->lock, NULL);
	q->max_bytes = max_bytes;
}

static void free_list(struct event_chunk *c)
{
	while (c) {
		struct event_chunk *next = c->next;

		free(c);
		c = next;
	}
}

void event_queue__fini(struct event_queue *q)
{
	free_list(q->head);
	free_list(q->fill);
	free_list(q->spare);
	pthread_mutex_destroy(&q->lock);
	memset(q, 0, sizeof(*q));
}

static struct event_chunk *new_chunk(struct event_queue *q, size_t need)
{
	struct event_chunk *c = NULL;
	size_t cap = CHUNK_BYTES - sizeof(*c);

	if (need <= cap) {
		pthread_mutex_lock(&q->lock);
		c = q->spare;
		if (c) {
			q->spare = c->next;
			q->nspare--;
		}
		pthread_mutex_unlock(&q->lock);
	} else {
		/* one record larger than a chunk gets a chunk of its own */
		cap = need;
	}
	if (!c) {
		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
	}
	c->next = NULL;
	c->len = 0;
	return c;
}

void event_queue__count_dropped(struct event_queue *q)
{
	__atomic_fetch_add(&q->st.dropped, 1, __ATOMIC_RELAXED);
}

static int push(struct event_queue *q, const void *data, size_t size,
		uint64_t limit, bool count)
{
	size_t need = rec_bytes(size);
	struct event_chunk *c = q->fill;
	unsigned char *at;
	uint64_t queued = load(&q->st.queued_bytes);

	if (queued + need > limit) {
		if (count)
			event_queue__count_dropped(q);
		return -ENOBUFS;
	}
	/* fill always holds a record: a chunk is taken for one */
	if (!c || c->cap - c->len < need) {
		struct event_chunk *n = new_chunk(q, need);

		if (!n) {
			if (count)
				event_queue__count_dropped(q);
			return -ENOMEM;
		}
		/* the full one goes to the reader now, in order */
		event_queue__publish(q);
		q->fill = c = n;
	}
	at = (unsigned char *)c->data + c->len;
	*(uint32_t *)at = (uint32_t)size;
	memcpy(at + REC_HDR, data, size);
	c->len += need;
	queued =
		__atomic_add_fetch(&q->st.queued_bytes, need, __ATOMIC_RELAXED);
	/* one writer: nobody else raises the peak */
	if (queued > load(&q->st.peak_bytes))
		__atomic_store_n(&q->st.peak_bytes, queued, __ATOMIC_RELAXED);
	return 0;
}

int event_queue__push(struct event_queue *q, const void *data, size_t size)
{
	return push(q, data, size, q->max_bytes, true);
}

int event_queue__push_reserved(struct event_queue *q, const void *data,
			       size_t size)
{
	return push(q, data, size, q->max_bytes + EVENT_QUEUE_RESERVE, false);
}

bool event_queue__publish(struct event_queue *q)
{
	struct event_chunk *c = q->fill;

	if (!c || !c->len)
		return false;
	pthread_mutex_lock(&q->lock);
	if (q->tail)
		q->tail->next = c;
	else
		q->head = c;
	q->tail = c;
	pthread_mutex_unlock(&q->lock);
	q->fill = NULL;
	return true;
}

size_t event_queue__consume(struct event_queue *q, unsigned int max_chunks,
			    int (*fn)(void *ctx, void *data, size_t size),
			    void *ctx, bool *more)
{
	struct event_chunk *list, *last, *c, *next, *keep = NULL;
	unsigned int taken = 1;
	uint64_t bytes = 0;
	size_t n = 0;

	pthread_mutex_lock(&q->lock);
	list = last = q->head;
	while (last && last->next && (!max_chunks || taken < max_chunks)) {
		last = last->next;
		taken++;
	}
	if (last) {
		q->head = last->next;
		if (!q->head)
			q->tail = NULL;
		last->next = NULL;
	}
	if (more)
		*more = q->head != NULL;
	pthread_mutex_unlock(&q->lock);
	if (!list)
		return 0;
	for (c = list; c; c = c->next) {
		for (size_t off = 0; off < c->len;) {
			unsigned char *at = (unsigned char *)c->data + off;
			uint32_t size = *(uint32_t *)at;

			fn(ctx, at + REC_HDR, size);
			off += rec_bytes(size);
			n++;
		}
		bytes += c->len;
	}
	pthread_mutex_lock(&q->lock);
	for (c = list; c; c = next) {
		next = c->next;
		if (q->nspare < MAX_SPARE &&
		    c->cap == CHUNK_BYTES - sizeof(*c)) {
			c->next = q->spare;
			q->spare = c;
			q->nspare++;
		} else {
			/* freed below, out of the writer's way */
			c->next = keep;
			keep = c;
		}
	}
	q->st.records += n;
	pthread_mutex_unlock(&q->lock);
	free_list(keep);
	__atomic_fetch_sub(&q->st.queued_bytes, bytes, __ATOMIC_RELAXED);
	return n;
}

void event_queue__stats(struct event_queue *q, struct event_queue_stats *st)
{
	pthread_mutex_lock(&q->lock);
	st->records = q->st.records;
	pthread_mutex_unlock(&q->lock);
	st->queued_bytes = load(&q->st.queued_bytes);
	st->peak_bytes = load(&q->st.peak_bytes);
	st->dropped = load(&q->st.dropped);
}

uint64_t event_queue__queued_bytes(const struct event_queue *q)
{
	return load(&q->st.queued_bytes);
}
