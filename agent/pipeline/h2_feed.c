// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/h2/conn.h"
#include "agent/h2/detect.h"
#include "agent/pipeline/h2_feed.h"

#define BUCKETS  4096 /* a power of 2 */
#define HEAD_MAX (MM_HEAD_MAX * 4)

struct fconn {
	uint64_t conn_id;
	uint32_t tgid;
	uint32_t gen;     /* route table of the newest bytes */
	uint8_t gw;       /* gateway slot of the process */
	uint64_t last_ns; /* capture time of its newest bytes */
	uint8_t leg;
	bool dropping; /* ended by a loss: open streams are not exchanges */
	struct h2_conn
		*dec; /* NULL: refused (not HTTP/2), kept until its close */
	struct h2_feed *f;
	struct fconn *next;
};

struct h2_feed {
	h2_feed_exchange_fn fn;
	void *ctx;
	struct fconn *b[BUCKETS];
	struct h2_feed_stats st;
};

static size_t bucket(uint64_t id)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return id & (BUCKETS - 1);
}

/* A field that would break the HTTP/1 head it goes into (or a header name). */
static bool unsafe(const char *v, bool spaces)
{
	for (; *v; v++)
		if (*v == '\r' || *v == '\n' ||
		    (spaces && (*v == ' ' || *v == '\t')))
			return true;
	return false;
}

static void on_exchange(void *ctx, const struct h2_exchange *ex)
{
	struct fconn *fc = ctx;
	struct h2_feed *f = fc->f;
	struct exchange e = {
		.leg = fc->leg,
		.method = ex->method,
		.flags = ex->flags,
		.status = ex->status,
		.tgid = fc->tgid,
		.route_gen = fc->gen,
		.gw = fc->gw,
		.route_id = MM_ROUTE_DEFER,
		.grpc_status = ex->grpc_status >= 0 && ex->grpc_status <= 16
				       ? ex->grpc_status
				       : EXCHANGE_GRPC_NONE,
		.req_seq = ex->stream_id,
		.conn_id = fc->conn_id,
		.start_ns = ex->start_ns,
		.end_ns = ex->end_ns,
		.req_bytes = ex->req_bytes,
		.resp_bytes = ex->resp_bytes,
	};
	char head[HEAD_MAX];
	int n;

	if (fc->dropping) {
		f->st.lost_streams++;
		return;
	}
	f->st.exchanges++;
	/* a field that would add lines to the head: unknown, never a route */
	if (ex->unknown & (H2_UNK_METHOD | H2_UNK_PATH | H2_UNK_AUTHORITY) ||
	    !ex->path[0] || unsafe(ex->method_str, true) ||
	    unsafe(ex->path, true) || unsafe(ex->authority, true)) {
		/* a field from before the attach: unknown, never a guess */
		e.route_id = MM_ROUTE_UNKNOWN;
		f->st.unknown++;
		f->fn(f->ctx, &e, "", 0, true);
		return;
	}
	n = snprintf(head, sizeof(head), "%s %s HTTP/1.1\r\nhost: %s\r\n%s\r\n",
		     ex->method_str, ex->path, ex->authority, ex->headers);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(head))
		n = sizeof(head) - 1;
	f->fn(f->ctx, &e, head, n,
	      ex->headers_trunc || (size_t)n == sizeof(head) - 1);
}

static struct fconn **find(struct h2_feed *f, uint64_t id)
{
	struct fconn **pp = &f->b[bucket(id)];

	while (*pp && (*pp)->conn_id != id)
		pp = &(*pp)->next;
	return pp;
}

static void end_conn(struct h2_feed *f, struct fconn **pp, uint64_t now,
		     bool lost)
{
	struct fconn *fc = *pp;

	*pp = fc->next;
	fc->dropping = lost;
	if (fc->dec)
		h2_conn__free(fc->dec, now);
	free(fc);
	f->st.open--;
}

struct h2_feed *h2_feed__new(h2_feed_exchange_fn fn, void *ctx)
{
	struct h2_feed *f = calloc(1, sizeof(*f));

	if (!f)
		return NULL;
	f->fn = fn;
	f->ctx = ctx;
	return f;
}

void h2_feed__free(struct h2_feed *f, uint64_t now_ns)
{
	if (!f)
		return;
	/* the agent stops, the connections do not: nothing of them is counted */
	for (size_t i = 0; i < BUCKETS; i++)
		while (f->b[i])
			end_conn(f, &f->b[i], now_ns, true);
	free(f);
}

/*
 * The agent lost a record of the connection: its decoder ends as lost (its
 * open streams are counted, not reported) and an entry without one stays,
 * so the later bytes are ignored until BPF's close or the idle limit.
 */
static void gap(struct h2_feed *f, struct fconn **pp,
		const struct mm_data_event *e)
{
	struct fconn *fc = *pp;

	/* once a connection: a stub's later records may find the queue full too */
	if (!fc || fc->dec)
		f->st.lost_conns++;
	if (!fc) {
		fc = calloc(1, sizeof(*fc));
		if (!fc)
			return;
		fc->conn_id = e->conn_id;
		fc->f = f;
		*pp = fc;
		f->st.conns++;
		f->st.open++;
	}
	fc->last_ns = e->ts_ns;
	fc->dropping = true;
	if (fc->dec)
		h2_conn__free(fc->dec, e->ts_ns);
	fc->dec = NULL;
}

int h2_feed__event(struct h2_feed *f, const void *data, size_t size)
{
	const struct mm_data_event *e = data;
	struct fconn **pp, *fc;

	if (size < sizeof(*e) || e->len > size - sizeof(*e))
		return 0;
	pp = find(f, e->conn_id);
	if (e->type == MM_EVT_H2_CLOSE && e->flags & H2_FEED_GAP) {
		gap(f, pp, e);
		return 0;
	}
	if (e->type == MM_EVT_H2_CLOSE) {
		if (*pp) {
			/* one without a decoder was refused or counted at its gap */
			if (e->flags & MM_DATA_LOST && (*pp)->dec)
				f->st.lost_conns++;
			end_conn(f, pp, e->ts_ns, e->flags & MM_DATA_LOST);
		}
		return 0;
	}
	if (e->type != MM_EVT_H2_DATA)
		return 0;
	fc = *pp;
	if (!fc) {
		struct h2_conn_opts o = {
			.from_start = e->flags & MM_DATA_FROM_START,
			.on_exchange = on_exchange,
		};
		struct h2_upgrade_head uh;
		struct h2_upgrade_req ur;

		/* h2c by Upgrade: the request answered with 101 is stream 1 */
		if (e->flags & MM_DATA_UPGRADE) {
			if (h2_detect__client((const uint8_t *)e->data, e->len,
					      &uh) != H2_DETECT_UPGRADE) {
				f->st.not_h2++;
				return 0;
			}
			ur = (struct h2_upgrade_req){ uh.method, uh.path,
						      uh.authority, e->ts_ns,
						      uh.head_len };
			o.upgrade = &ur;
		}

		fc = calloc(1, sizeof(*fc));
		if (!fc)
			return 0;
		fc->conn_id = e->conn_id;
		fc->tgid = e->tgid;
		fc->leg = e->leg;
		fc->f = f;
		o.ctx = fc;
		fc->dec = h2_conn__new(&o);
		if (!fc->dec) {
			free(fc);
			return 0;
		}
		*pp = fc;
		f->st.conns++;
		f->st.open++;
	}
	fc->gen = e->route_gen;
	fc->gw = e->gw;
	fc->last_ns = e->ts_ns;
	if (e->flags & MM_DATA_UPGRADE || !fc->dec)
		return 0; /* stream 1's head, or a refused connection's bytes */
	if (h2_conn__feed(fc->dec,
			  e->dir == MM_DIR_FROM_SERVER ? H2_FROM_SERVER
						       : H2_FROM_CLIENT,
			  e->data, e->len, e->ts_ns) == -EPROTO) {
		/* not HTTP/2 after all: its later bytes are ignored until close */
		f->st.not_h2++;
		fc->dropping = true;
		h2_conn__free(fc->dec, e->ts_ns);
		fc->dec = NULL;
	}
	return 0;
}

uint64_t h2_feed__expire(struct h2_feed *f, uint64_t now_ns, uint64_t idle_ns)
{
	uint64_t n = 0;

	if (!f)
		return 0;
	for (size_t i = 0; i < BUCKETS; i++) {
		struct fconn **pp = &f->b[i];

		while (*pp) {
			if (now_ns > (*pp)->last_ns + idle_ns) {
				if ((*pp)->dec)
					f->st.lost_conns++;
				end_conn(f, pp, now_ns, true);
				n++;
			} else {
				pp = &(*pp)->next;
			}
		}
	}
	return n;
}

void h2_feed__stats(const struct h2_feed *f, struct h2_feed_stats *st)
{
	if (f)
		*st = f->st;
	else
		memset(st, 0, sizeof(*st));
}
