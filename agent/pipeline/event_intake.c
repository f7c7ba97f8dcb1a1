// SPDX-License-Identifier: Apache-2.0
#include <stdlib.h>
#include <string.h>

#include "agent/pipeline/event_intake.h"
#include "agent/pipeline/event_queue.h"
#include "agent/pipeline/h2_feed.h"
#include "bpf/milometer.h"

/*
 * The bytes of a record that carry something. BPF reserves a head record
 * at its largest (a ring reservation's size is fixed at the verifier's
 * view; 5.19's dynptrs would lift that): a 100-byte head arrives in a
 * 1104-byte record. Only the used part is queued, so the queue holds ten
 * times as many heads as it would. (HTTP/2 data is sent at its size.)
 */
static size_t used_bytes(const void *data, size_t size)
{
	const struct mm_http_event *he = data;

	if (size >= sizeof(*he) && he->type == MM_EVT_HEAD &&
	    sizeof(*he) + he->head_len < size)
		return sizeof(*he) + he->head_len;
	return size;
}

static const struct mm_data_event *as_h2(const void *data, size_t size)
{
	const struct mm_data_event *e = data;

	if (size < sizeof(*e) ||
	    (e->type != MM_EVT_H2_DATA && e->type != MM_EVT_H2_CLOSE))
		return NULL;
	return e;
}

/*
 * The close that ends the connection's decoder at the gap; a connection
 * BPF closed meanwhile ends as lost, with nothing left to ignore.
 */
static bool gap_close(struct event_intake *in, uint64_t conn_id, uint64_t ts_ns,
		      bool closed)
{
	struct mm_data_event e = {
		.type = MM_EVT_H2_CLOSE,
		.flags = MM_DATA_LOST | (closed ? 0 : H2_FEED_GAP),
		.conn_id = conn_id,
		.ts_ns = ts_ns,
	};

	return !event_queue__push_reserved(in->q, &e, sizeof(e));
}

static struct event_intake_gap *gap_find(struct event_intake *in,
					 uint64_t conn_id)
{
	for (unsigned int i = 0; i < in->ngaps; i++)
		if (in->gaps[i].conn_id == conn_id)
			return &in->gaps[i];
	return NULL;
}

/*
 * A record of the connection was refused: its gap close goes now, or as
 * soon as the reserve has room; until then its records are dropped.
 */
static void gap_open(struct event_intake *in, const struct mm_data_event *e,
		     bool closed)
{
	struct event_intake_gap *g;

	if (gap_close(in, e->conn_id, e->ts_ns, closed))
		return;
	if (in->ngaps == in->cap) {
		unsigned int cap = in->cap ? in->cap * 2 : 16;
		void *p = realloc(in->gaps, cap * sizeof(*in->gaps));

		/* no memory either: its decoder may read across the gap */
		if (!p)
			return;
		in->gaps = p;
		in->cap = cap;
	}
	g = &in->gaps[in->ngaps++];
	*g = (struct event_intake_gap){ e->conn_id, e->ts_ns, closed };
}

/* A record of a connection whose gap close waits: dropped. */
static bool gap_pending(struct event_intake *in, const struct mm_data_event *e)
{
	struct event_intake_gap *g = gap_find(in, e->conn_id);

	if (!g)
		return false;
	if (e->type == MM_EVT_H2_CLOSE)
		g->closed = true;
	else
		event_queue__count_dropped(in->q);
	return true;
}

void event_intake__record(struct event_intake *in, const void *data,
			  size_t size)
{
	const struct mm_data_event *h2 = as_h2(data, size);

	if (h2 && in->ngaps && gap_pending(in, h2))
		return;
	/* a close is no data: it may use the reserve, and ends a gap's wait */
	if (h2 && h2->type == MM_EVT_H2_CLOSE) {
		if (event_queue__push_reserved(in->q, data, size))
			gap_open(in, h2, true);
		return;
	}
	/* a refused record is counted by the queue */
	if (event_queue__push(in->q, data, used_bytes(data, size)) && h2)
		gap_open(in, h2, false);
}

void event_intake__retry(struct event_intake *in)
{
	for (unsigned int i = 0; i < in->ngaps;) {
		struct event_intake_gap *g = &in->gaps[i];

		if (gap_close(in, g->conn_id, g->ts_ns, g->closed))
			*g = in->gaps[--in->ngaps];
		else
			i++;
	}
}

void event_intake__fini(struct event_intake *in)
{
	free(in->gaps);
	in->gaps = NULL;
	in->ngaps = in->cap = 0;
}
