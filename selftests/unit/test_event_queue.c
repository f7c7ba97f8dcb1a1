// SPDX-License-Identifier: Apache-2.0
/*
 * The queue between the ring buffer's reader thread and the event loop:
 * records come out once each, whole and in the order pushed, across chunk
 * boundaries and for a record larger than a chunk; past its bound a
 * record is refused and counted; a writer and a reader on two threads
 * lose and reorder nothing.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "agent/pipeline/event_queue.h"
#include "selftests/unit/test.h"

struct seen {
	uint32_t next; /* the sequence number expected */
	uint32_t bad;  /* records out of order or damaged */
	uint64_t bytes;
};

/* a record: its sequence number, then bytes that all equal it (mod 256) */
static size_t make_rec(unsigned char *buf, uint32_t seq, size_t size)
{
	memcpy(buf, &seq, sizeof(seq));
	memset(buf + sizeof(seq), (int)(seq & 0xff), size - sizeof(seq));
	return size;
}

static int check_rec(void *ctx, void *data, size_t size)
{
	struct seen *s = ctx;
	const unsigned char *p = data;
	uint32_t seq;

	memcpy(&seq, p, sizeof(seq));
	if (seq != s->next)
		s->bad++;
	for (size_t i = sizeof(seq); i < size; i++)
		if (p[i] != (seq & 0xff)) {
			s->bad++;
			break;
		}
	s->next = seq + 1;
	s->bytes += size;
	return 0;
}

/* sizes that cross the 64 KiB chunks at odd offsets */
static size_t size_of(uint32_t seq)
{
	return 4 + (seq * 37) % 1200;
}

TEST(event_queue_order_and_chunks)
{
	static unsigned char buf[200 << 10];
	struct event_queue q;
	struct event_queue_stats st;
	struct seen s = {};
	uint64_t pushed = 0;
	uint32_t seq;

	event_queue__init(&q, 64 << 20);
	ASSERT_TRUE(!event_queue__publish(&q));
	ASSERT_EQ(event_queue__consume(&q, 0, check_rec, &s, NULL), 0);
	/* 3000 records over several chunks: unseen until published */
	for (seq = 0; seq < 3000; seq++) {
		size_t n = make_rec(buf, seq, size_of(seq));

		ASSERT_EQ(event_queue__push(&q, buf, n), 0);
		pushed += n;
	}
	/* full chunks went to the reader as they filled; the last did not */
	ASSERT_TRUE(event_queue__consume(&q, 0, check_rec, &s, NULL) < 3000);
	ASSERT_TRUE(event_queue__publish(&q));
	event_queue__consume(&q, 0, check_rec, &s, NULL);
	ASSERT_EQ(s.next, 3000);
	ASSERT_EQ(s.bad, 0);
	ASSERT_EQ(s.bytes, pushed);
	/* a record larger than a chunk, between two small ones */
	for (; seq < 3003; seq++) {
		size_t n = make_rec(buf, seq, seq == 3001 ? sizeof(buf) : 16);

		ASSERT_EQ(event_queue__push(&q, buf, n), 0);
	}
	ASSERT_TRUE(event_queue__publish(&q));
	ASSERT_EQ(event_queue__consume(&q, 0, check_rec, &s, NULL), 3);
	ASSERT_EQ(s.next, 3003);
	ASSERT_EQ(s.bad, 0);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.queued_bytes, 0);
	ASSERT_EQ(st.records, 3003);
	ASSERT_EQ(st.dropped, 0);
	ASSERT_TRUE(st.peak_bytes >= sizeof(buf));
	event_queue__fini(&q);
}

TEST(event_queue_bound)
{
	unsigned char buf[96];
	struct event_queue q;
	struct event_queue_stats st;
	struct seen s = {};

	/* room for ten 96-byte records (each 8 bytes of header + 96) */
	event_queue__init(&q, 10 * 104);
	for (uint32_t seq = 0; seq < 10; seq++)
		ASSERT_EQ(event_queue__push(&q, buf, make_rec(buf, seq, 96)),
			  0);
	ASSERT_EQ(event_queue__push(&q, buf, make_rec(buf, 10, 96)), -ENOBUFS);
	ASSERT_EQ(event_queue__push(&q, buf, make_rec(buf, 10, 96)), -ENOBUFS);
	event_queue__publish(&q);
	/* queued but not yet consumed still counts against the bound */
	ASSERT_EQ(event_queue__push(&q, buf, make_rec(buf, 10, 96)), -ENOBUFS);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.dropped, 3);
	ASSERT_EQ(st.queued_bytes, 10 * 104);
	ASSERT_EQ(event_queue__consume(&q, 0, check_rec, &s, NULL), 10);
	ASSERT_EQ(s.bad, 0);
	/* consumed: room again */
	ASSERT_EQ(event_queue__push(&q, buf, make_rec(buf, 10, 96)), 0);
	event_queue__publish(&q);
	ASSERT_EQ(event_queue__consume(&q, 0, check_rec, &s, NULL), 1);
	ASSERT_EQ(s.next, 11);
	ASSERT_EQ(s.bad, 0);
	event_queue__fini(&q);
}

#define THREAD_RECS 400000u

static void *writer(void *arg)
{
	struct event_queue *q = arg;
	unsigned char buf[1300];

	for (uint32_t seq = 0; seq < THREAD_RECS; seq++) {
		size_t n = make_rec(buf, seq, size_of(seq));

		/* the bound is far above what the reader lets pile up */
		while (event_queue__push(q, buf, n))
			;
		if (seq % 97 == 0)
			event_queue__publish(q);
	}
	event_queue__publish(q);
	return NULL;
}

TEST(event_queue_two_threads)
{
	struct event_queue q;
	struct event_queue_stats st;
	struct seen s = {};
	pthread_t t;

	event_queue__init(&q, 1ULL << 40);
	ASSERT_EQ(pthread_create(&t, NULL, writer, &q), 0);
	while (s.next < THREAD_RECS && !s.bad)
		event_queue__consume(&q, 0, check_rec, &s, NULL);
	pthread_join(t, NULL);
	event_queue__consume(&q, 0, check_rec, &s, NULL);
	ASSERT_EQ(s.next, THREAD_RECS);
	ASSERT_EQ(s.bad, 0);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.records, THREAD_RECS);
	ASSERT_EQ(st.queued_bytes, 0);
	ASSERT_EQ(st.dropped, 0);
	event_queue__fini(&q);
}

static int count_rec(void *ctx, void *data, size_t size)
{
	(void)data;
	(void)size;
	++*(size_t *)ctx;
	return 0;
}

TEST(event_queue_bounded_take_and_reserve)
{
	static unsigned char buf[60 << 10];
	struct event_queue q;
	struct event_queue_stats st;
	size_t seen = 0;
	bool more = true;

	event_queue__init(&q, 1 << 20);
	/* five chunks of one 60 KiB record each */
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(event_queue__push(&q, buf, sizeof(buf)), 0);
	event_queue__publish(&q);
	ASSERT_EQ(event_queue__consume(&q, 2, count_rec, &seen, &more), 2);
	ASSERT_TRUE(more);
	ASSERT_EQ(event_queue__consume(&q, 2, count_rec, &seen, &more), 2);
	ASSERT_TRUE(more);
	ASSERT_EQ(event_queue__consume(&q, 2, count_rec, &seen, &more), 1);
	ASSERT_TRUE(!more);
	ASSERT_EQ(seen, 5);
	event_queue__fini(&q);

	/* past the bound only the reserve's records get in, up to it */
	event_queue__init(&q, 1024);
	ASSERT_EQ(event_queue__push(&q, buf, 1000), 0);
	ASSERT_EQ(event_queue__push(&q, buf, 32), -ENOBUFS);
	ASSERT_EQ(event_queue__push_reserved(&q, buf, 32), 0);
	ASSERT_EQ(event_queue__push_reserved(&q, buf, EVENT_QUEUE_RESERVE),
		  -ENOBUFS);
	/* the writer's own drop counts; the reserve's refusals do not */
	event_queue__count_dropped(&q);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.dropped, 2);
	event_queue__fini(&q);
}
