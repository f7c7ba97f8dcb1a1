// SPDX-License-Identifier: Apache-2.0
#include <string.h>

#include "agent/pipeline/event_intake.h"
#include "agent/pipeline/event_queue.h"
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

static struct event_intake_gap *gap_find(struct event_intake *in, uint64_t conn_id)
{
	for (unsigned int i = 0; i < in->ngaps; i++)
		if (in->gaps[i].conn_id == conn_id)
			return &in->gaps[i];
	return NULL;
}

static void gap_drop(struct event_intake *in, struct event_intake_gap *g)
{
	*g = in->gaps[--in->ngaps];
}

/* Queue the lost close once; false while the queue has no room for it. */
static bool gap_close(struct event_intake *in, struct event_intake_gap *g)
{
	struct mm_data_event e = {
		.type = MM_EVT_H2_CLOSE,
		.flags = MM_DATA_LOST,
		.conn_id = g->conn_id,
		.ts_ns = g->ts_ns,
	};

	if (!g->close_sent)
		g->close_sent =
			!event_queue__push_reserved(in->q, &e, sizeof(e));
	return g->close_sent;
}

/*
 * An HTTP/2 connection's bytes are one stream for its decoder: a record
 * of them refused here is a gap it cannot see (records carry no offsets),
 * after which it would decode garbage as frames. So the connection's
 * decoder is ended as BPF ends it when it loses bytes (a close marked
 * lost: its open streams are not counted), and its next record starts a
 * new decoder as for a connection found open (MM_DATA_FROM_START cleared:
 * frames and HPACK picked up midway), which counts the streams it sees
 * start. Until the lost close is queued (the queue's reserve), the
 * connection's records are dropped and counted.
 */
static void h2_refused(struct event_intake *in, const struct mm_data_event *e)
{
	struct event_intake_gap *g = gap_find(in, e->conn_id);

	/* a close the queue refused goes as it is, from the reserve */
	if (e->type == MM_EVT_H2_CLOSE &&
	    !event_queue__push_reserved(in->q, e, sizeof(*e))) {
		if (g)
			gap_drop(in, g);
		return;
	}
	if (g)
		return;
	/* the oldest makes room: a gap of its would go unseen */
	if (in->ngaps == EVENT_INTAKE_MAX_GAPS)
		memmove(&in->gaps[0], &in->gaps[1],
			--in->ngaps * sizeof(in->gaps[0]));
	g = &in->gaps[in->ngaps++];
	*g = (struct event_intake_gap){ .conn_id = e->conn_id, .ts_ns = e->ts_ns };
	gap_close(in, g);
}

/* A record of a connection with a gap: true when it was handled here. */
static bool h2_after_gap(struct event_intake *in, const struct mm_data_event *e,
			 size_t size)
{
	struct event_intake_gap *g = gap_find(in, e->conn_id);
	unsigned char buf[sizeof(*e) + MM_DATA_CHUNK];

	if (!g)
		return false;
	if (!gap_close(in, g)) {
		/* a close too: the lost close still to queue ends the decoder */
		event_queue__count_dropped(in->q);
		return true;
	}
	if (e->type == MM_EVT_H2_CLOSE) {
		/* the decoder ended with the lost close: nothing to end */
		gap_drop(in, g);
		return true;
	}
	if (size > sizeof(buf)) {
		event_queue__count_dropped(in->q);
		return true;
	}
	memcpy(buf, e, size);
	((struct mm_data_event *)buf)->flags &= ~MM_DATA_FROM_START;
	/* queued: a new decoder picks the connection up midway */
	if (!event_queue__push(in->q, buf, size))
		gap_drop(in, g);
	return true;
}

static bool is_h2(const void *data, size_t size)
{
	const struct mm_data_event *e = data;

	return size >= sizeof(*e) &&
	       (e->type == MM_EVT_H2_DATA || e->type == MM_EVT_H2_CLOSE);
}

void event_intake__record(struct event_intake *in, const void *data,
			  size_t size)
{
	if (in->ngaps && is_h2(data, size) && h2_after_gap(in, data, size))
		return;
	/* a refused record is counted by the queue */
	if (event_queue__push(in->q, data, used_bytes(data, size)) &&
	    is_h2(data, size))
		h2_refused(in, data);
}

void event_intake__retry(struct event_intake *in)
{
	for (unsigned int i = 0; i < in->ngaps; i++)
		gap_close(in, &in->gaps[i]);
}
