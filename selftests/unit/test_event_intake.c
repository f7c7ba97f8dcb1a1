// SPDX-License-Identifier: Apache-2.0
/*
 * The ring buffer's records on their way into the queue: a head record
 * without its reservation's padding; an HTTP/2 connection whose record
 * the full queue refused gets its gap close (MM_DATA_LOST | H2_FEED_GAP)
 * before anything else of it, while other connections go on; with the
 * reserve full, the connection's records are dropped until the close is
 * in, and a connection BPF closed meanwhile gets a plain lost close.
 */
#include <errno.h>

#include "agent/pipeline/event_intake.h"
#include "agent/pipeline/event_queue.h"
#include "agent/pipeline/h2_feed.h"
#include "bpf/milometer.h"
#include "selftests/unit/test.h"

struct rec {
	uint8_t type, flags;
	uint64_t conn_id;
	size_t size;
	uint32_t tag; /* first data bytes */
};

struct log {
	struct rec r[64];
	size_t n;
};

static int log_rec(void *ctx, void *data, size_t size)
{
	struct log *l = ctx;
	const struct mm_data_event *e = data;
	struct rec *r = &l->r[l->n < 64 ? l->n++ : 63];

	r->type = e->type;
	r->size = size;
	if (e->type == MM_EVT_H2_DATA || e->type == MM_EVT_H2_CLOSE) {
		r->flags = e->flags;
		r->conn_id = e->conn_id;
		if (e->len >= 4)
			memcpy(&r->tag, e->data, 4);
	}
	return 0;
}

/* an HTTP/2 data record of 100 bytes tagged `tag` */
static void h2_data(struct event_intake *in, uint64_t conn, uint32_t tag)
{
	unsigned char buf[sizeof(struct mm_data_event) + 100] = {};
	struct mm_data_event *e = (void *)buf;

	e->type = MM_EVT_H2_DATA;
	e->flags = MM_DATA_FROM_START;
	e->conn_id = conn;
	e->len = 100;
	memcpy(e->data, &tag, sizeof(tag));
	event_intake__record(in, buf, sizeof(buf));
}

static void drain(struct event_queue *q, struct log *l)
{
	event_queue__publish(q);
	event_queue__consume(q, 0, log_rec, l, NULL);
}

TEST(event_intake_head_without_padding)
{
	unsigned char buf[sizeof(struct mm_http_event) + 2 * MM_HEAD_MAX] = {};
	struct mm_http_event *e = (void *)buf;
	struct event_queue q;
	struct event_intake in = { .q = &q };
	struct log l = {};

	event_queue__init(&q, 1 << 20);
	e->type = MM_EVT_HEAD;
	e->head_len = 57;
	event_intake__record(&in, buf, sizeof(buf));
	/* a head_len past the record is left to the consumer's own check */
	e->head_len = 0xffff;
	event_intake__record(&in, buf, sizeof(buf));
	e->type = MM_EVT_EXCHANGE;
	event_intake__record(&in, buf, sizeof(struct mm_http_event));
	drain(&q, &l);
	ASSERT_EQ(l.n, 3);
	ASSERT_EQ(l.r[0].size, sizeof(struct mm_http_event) + 57);
	ASSERT_EQ(l.r[1].size, sizeof(buf));
	ASSERT_EQ(l.r[2].size, sizeof(struct mm_http_event));
	event_queue__fini(&q);
}

TEST(event_intake_h2_gap_close_before_the_rest)
{
	struct event_queue q;
	struct event_intake in = { .q = &q };
	struct event_queue_stats st;
	struct log l = {};

	/* room for three 144-byte records (8 of header, 32 + 100 padded to 136) */
	event_queue__init(&q, 3 * 144);
	h2_data(&in, 1, 10);
	h2_data(&in, 2, 20);
	h2_data(&in, 1, 11);
	h2_data(&in, 1, 12); /* refused: conn 1 has a gap */
	drain(&q, &l);
	h2_data(&in, 2, 21); /* conn 2 never lost a byte */
	h2_data(&in, 1, 13); /* for h2_feed to ignore */
	drain(&q, &l);
	ASSERT_EQ(l.n, 6);
	ASSERT_TRUE(l.r[0].tag == 10 && l.r[1].tag == 20 && l.r[2].tag == 11);
	/* the gap's close comes before anything else of conn 1 */
	ASSERT_EQ(l.r[3].type, MM_EVT_H2_CLOSE);
	ASSERT_EQ(l.r[3].conn_id, 1);
	ASSERT_EQ(l.r[3].flags, MM_DATA_LOST | H2_FEED_GAP);
	ASSERT_TRUE(l.r[4].tag == 21 && l.r[5].tag == 13);
	ASSERT_TRUE(l.r[5].flags == MM_DATA_FROM_START);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.dropped, 1);
	ASSERT_EQ(in.ngaps, 0);
	event_queue__fini(&q);
	event_intake__fini(&in);
}

TEST(event_intake_h2_gap_waits_for_the_reserve)
{
	static unsigned char big[EVENT_QUEUE_RESERVE];
	struct mm_data_event close = { .type = MM_EVT_H2_CLOSE, .conn_id = 1 };
	struct event_queue q;
	struct event_intake in = { .q = &q };
	struct event_queue_stats st;
	struct log l = {};

	/* one data record and a close (40 bytes) */
	event_queue__init(&q, 144 + 40);
	h2_data(&in, 1, 10);
	/* the reserve taken up but for 32 bytes: no room for a close */
	ASSERT_EQ(event_queue__push_reserved(&q, big, sizeof(big)), 0);
	h2_data(&in, 1, 11); /* refused, its gap close too */
	ASSERT_EQ(in.ngaps, 1);
	h2_data(&in, 1, 12); /* dropped: the gap close is not in yet */
	h2_data(&in, 2, 20); /* refused: conn 2's gap waits too */
	/* BPF's close of conn 1: nothing is left to ignore after the gap */
	event_intake__record(&in, &close, sizeof(close));
	ASSERT_EQ(in.ngaps, 2);
	drain(&q, &l);
	ASSERT_EQ(l.n, 2);
	/* after the batch, with room again: both closes */
	event_intake__retry(&in);
	ASSERT_EQ(in.ngaps, 0);
	drain(&q, &l);
	ASSERT_EQ(l.n, 4);
	ASSERT_TRUE(l.r[2].type == MM_EVT_H2_CLOSE && l.r[2].conn_id == 1);
	ASSERT_EQ(l.r[2].flags, MM_DATA_LOST);
	ASSERT_TRUE(l.r[3].type == MM_EVT_H2_CLOSE && l.r[3].conn_id == 2);
	ASSERT_EQ(l.r[3].flags, MM_DATA_LOST | H2_FEED_GAP);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.dropped, 3);
	event_queue__fini(&q);
	event_intake__fini(&in);
}

TEST(event_intake_h2_close_goes_from_the_reserve)
{
	struct mm_data_event close = { .type = MM_EVT_H2_CLOSE, .conn_id = 3 };
	struct event_queue q;
	struct event_intake in = { .q = &q };
	struct event_queue_stats st;
	struct log l = {};

	event_queue__init(&q, 144);
	h2_data(&in, 3, 30);
	event_intake__record(&in, &close, sizeof(close));
	drain(&q, &l);
	ASSERT_EQ(l.n, 2);
	/* a plain close: the connection ended, nothing was lost */
	ASSERT_TRUE(l.r[1].type == MM_EVT_H2_CLOSE && l.r[1].flags == 0);
	ASSERT_EQ(in.ngaps, 0);
	event_queue__stats(&q, &st);
	ASSERT_EQ(st.dropped, 0);
	event_queue__fini(&q);
}
