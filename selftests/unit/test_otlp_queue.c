// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>

#include "exporter/otlp_queue.h"
#include "selftests/unit/test.h"

static void *blob(size_t len, char tag)
{
	char *p = malloc(len);

	memset(p, tag, len);
	return p;
}

TEST(otlp_queue_fifo_and_bound)
{
	struct otlp_queue q;
	struct otlp_batch *b;

	otlp_queue__init(&q, 100);
	ASSERT_EQ(otlp_queue__push(&q, blob(40, 'a'), 40), 0);
	ASSERT_EQ(otlp_queue__push(&q, blob(40, 'b'), 40), 0);
	ASSERT_EQ(q.bytes, 80);
	/* 30 more does not fit: 'a' (oldest) goes. */
	ASSERT_EQ(otlp_queue__push(&q, blob(30, 'c'), 30), 0);
	ASSERT_EQ(q.bytes, 70);
	ASSERT_EQ(q.batches, 2);
	ASSERT_EQ(q.dropped_batches, 1);
	ASSERT_EQ(q.dropped_bytes, 40);
	b = otlp_queue__claim(&q);
	ASSERT_TRUE(b && ((char *)b->buf)[0] == 'b');
	/* The head is claimed once. */
	ASSERT_TRUE(!otlp_queue__claim(&q));
	ASSERT_TRUE(!otlp_queue__done(&q, b, true));
	ASSERT_EQ(q.bytes, 30);
	b = otlp_queue__claim(&q);
	ASSERT_TRUE(b && ((char *)b->buf)[0] == 'c');
	/* Retry later: stays at the head. */
	ASSERT_TRUE(!otlp_queue__done(&q, b, false));
	ASSERT_TRUE(otlp_queue__claim(&q) == b);
	otlp_queue__done(&q, b, true);
	ASSERT_EQ(q.bytes, 0);
	ASSERT_EQ(q.batches, 0);
	ASSERT_TRUE(!otlp_queue__claim(&q));

	/* Bigger than the whole queue: refused and counted. */
	ASSERT_EQ(otlp_queue__push(&q, blob(101, 'x'), 101), -EMSGSIZE);
	ASSERT_EQ(q.dropped_batches, 2);
	ASSERT_EQ(q.dropped_bytes, 141);
	otlp_queue__fini(&q);
}

TEST(otlp_queue_drop_inflight_head)
{
	struct otlp_queue q;
	struct otlp_batch *b;

	otlp_queue__init(&q, 100);
	ASSERT_EQ(otlp_queue__push(&q, blob(60, 'a'), 60), 0);
	b = otlp_queue__claim(&q);
	ASSERT_TRUE(b);
	/* While 'a' is being sent, 'b' needs its room: 'a' is dropped but
	 * stays valid for the sender until done(). */
	ASSERT_EQ(otlp_queue__push(&q, blob(60, 'b'), 60), 0);
	ASSERT_EQ(q.bytes, 60);
	ASSERT_EQ(q.dropped_batches, 1);
	ASSERT_TRUE(((char *)b->buf)[59] == 'a');
	otlp_queue__replace(&q, b, blob(10, 'z'), 10);
	ASSERT_EQ(q.bytes, 60);
	ASSERT_TRUE(otlp_queue__done(&q, b, false));
	b = otlp_queue__claim(&q);
	ASSERT_TRUE(b && ((char *)b->buf)[0] == 'b');
	otlp_queue__replace(&q, b, blob(20, 'y'), 20);
	ASSERT_EQ(q.bytes, 20);
	otlp_queue__done(&q, b, false);
	otlp_queue__fini(&q);
	ASSERT_EQ(q.bytes, 0);
	ASSERT_EQ(q.dropped_batches, 2);
}
