// SPDX-License-Identifier: Apache-2.0
/*
 * agent/h2/conn.c + frame.c + detect.c: HTTP/2 conversations built here
 * frame by frame (header blocks from nghttp2's encoder), fed split at every
 * byte boundary, interleaved, padded, reset, cut by GOAWAY, joined late;
 * and agent/pipeline/h2_feed.c, which runs them from BPF's MM_EVT_H2_* events.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "agent/h2/conn.h"
#include "agent/h2/detect.h"
#include "agent/h2/frame.h"
#include "agent/pipeline/h2_feed.h"
#include "bpf/milometer.h"
#include "selftests/unit/test.h"

/* ---- building conversations ----------------------------------------- */

struct wire {
	uint8_t *b;
	size_t len, cap;
};

static void put(struct wire *w, const void *p, size_t n)
{
	if (w->len + n > w->cap) {
		w->cap = (w->len + n) * 2 + 256;
		w->b = realloc(w->b, w->cap);
	}
	memcpy(w->b + w->len, p, n);
	w->len += n;
}

static void frame(struct wire *w, uint8_t type, uint8_t flags, uint32_t sid,
		  const void *payload, size_t len)
{
	uint8_t h[9] = { len >> 16, len >> 8,  len,      type, flags,
			 sid >> 24, sid >> 16, sid >> 8, sid };

	put(w, h, 9);
	if (len)
		put(w, payload, len);
}

/* "name: value\n..." -> HPACK block with the connection's encoder */
static size_t encode(nghttp2_hd_deflater *d, const char *hdrs, uint8_t *out,
		     size_t cap)
{
	nghttp2_nv nv[32];
	char copy[2048], *save = NULL, *line;
	size_t n = 0;

	snprintf(copy, sizeof(copy), "%s", hdrs);
	for (line = strtok_r(copy, "\n", &save); line && n < 32;
	     line = strtok_r(NULL, "\n", &save)) {
		char *sep = strstr(line + 1, ": ");

		*sep = 0;
		nv[n++] = (nghttp2_nv){ (uint8_t *)line, (uint8_t *)sep + 2,
					strlen(line), strlen(sep + 2),
					NGHTTP2_NV_FLAG_NONE };
	}
	return nghttp2_hd_deflate_hd(d, out, cap, nv, n);
}

struct convo {
	struct wire c, s; /* client -> server, server -> client */
	nghttp2_hd_deflater *cenc, *senc;
};

static void convo_init(struct convo *cv, bool preface)
{
	static const uint8_t settings[] = {
		0, 1, 0, 0, 0x10, 0
	}; /* table 4096 */

	memset(cv, 0, sizeof(*cv));
	nghttp2_hd_deflate_new(&cv->cenc, 4096);
	nghttp2_hd_deflate_new(&cv->senc, 4096);
	if (!preface)
		return;
	put(&cv->c, H2_PREFACE, H2_PREFACE_LEN);
	frame(&cv->c, H2_SETTINGS, 0, 0, settings, sizeof(settings));
	frame(&cv->s, H2_SETTINGS, 0, 0, NULL, 0);
	frame(&cv->c, H2_SETTINGS, H2_F_ACK, 0, NULL, 0);
}

static void convo_free(struct convo *cv)
{
	free(cv->c.b);
	free(cv->s.b);
	nghttp2_hd_deflate_del(cv->cenc);
	nghttp2_hd_deflate_del(cv->senc);
}

static void headers(struct convo *cv, bool client, uint32_t sid, uint8_t flags,
		    const char *hdrs)
{
	uint8_t blk[2048];
	size_t n = encode(client ? cv->cenc : cv->senc, hdrs, blk, sizeof(blk));

	frame(client ? &cv->c : &cv->s, H2_HEADERS, flags | H2_F_END_HEADERS,
	      sid, blk, n);
}

static void data(struct convo *cv, bool client, uint32_t sid, uint8_t flags,
		 size_t n)
{
	uint8_t body[4096];

	memset(body, 'x', sizeof(body));
	frame(client ? &cv->c : &cv->s, H2_DATA, flags, sid, body, n);
}

/* ---- collecting exchanges ------------------------------------------- */

#define MAXEX 1100

struct got {
	int n;
	struct h2_exchange ex[MAXEX];
	char path[MAXEX][64], auth[MAXEX][64], method[MAXEX][16];
};

static void on_ex(void *ctx, const struct h2_exchange *ex)
{
	struct got *g = ctx;

	if (g->n >= MAXEX)
		return;
	g->ex[g->n] = *ex;
	snprintf(g->path[g->n], 64, "%s", ex->path);
	snprintf(g->auth[g->n], 64, "%s", ex->authority);
	snprintf(g->method[g->n], 16, "%s", ex->method_str);
	g->n++;
}

static int by_stream(struct got *g, uint32_t sid)
{
	for (int i = 0; i < g->n; i++)
		if (g->ex[i].stream_id == sid)
			return i;
	return -1;
}

static struct h2_conn *conn(struct got *g, bool from_start)
{
	struct h2_conn_opts o = { .from_start = from_start,
				  .on_exchange = on_ex,
				  .ctx = g };

	memset(g, 0, sizeof(*g));
	return h2_conn__new(&o);
}

/* ---- tests ---------------------------------------------------------- */

static const char *const get_a =
	":method: GET\n:scheme: https\n:authority: gw.example\n:path: /a/b?q=1\n"
	"user-agent: t\n";

TEST(h2_conn_get_split_at_every_byte)
{
	struct convo cv;
	size_t cut;

	convo_init(&cv, true);
	headers(&cv, true, 1, H2_F_END_STREAM, get_a);
	frame(&cv.s, H2_SETTINGS, H2_F_ACK, 0, NULL, 0);
	headers(&cv, false, 1, 0, ":status: 200\ncontent-length: 300\n");
	data(&cv, false, 1, 0, 100);
	frame(&cv.s, H2_PING, 0, 0, "12345678", 8);
	frame(&cv.s, H2_WINDOW_UPDATE, 0, 0, "\0\0\1\0", 4);
	frame(&cv.s, 0xfa, 0, 0, "unknown type", 12); /* skipped */
	data(&cv, false, 1, H2_F_END_STREAM, 200);
	for (cut = 0; cut <= cv.c.len + cv.s.len; cut++) {
		struct got g;
		struct h2_conn *c = conn(&g, true);
		size_t cc = cut < cv.c.len ? cut : cv.c.len;
		size_t sc = cut > cv.c.len ? cut - cv.c.len : 0;

		ASSERT_TRUE(c);
		/* client bytes in two chunks (ts 10, 20), server in two (30, 40) */
		ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, cc, 10), 0);
		ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b + cc,
					cv.c.len - cc, 20),
			  0);
		ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, sc, 30), 0);
		ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b + sc,
					cv.s.len - sc, 40),
			  0);
		ASSERT_EQ(g.n, 1);
		ASSERT_EQ(g.ex[0].stream_id, 1);
		ASSERT_EQ(g.ex[0].method, MM_M_GET);
		ASSERT_STREQ(g.path[0], "/a/b?q=1");
		ASSERT_STREQ(g.auth[0], "gw.example");
		ASSERT_EQ(g.ex[0].status, 200);
		ASSERT_EQ(g.ex[0].content_length, 300);
		ASSERT_EQ(g.ex[0].flags, 0);
		ASSERT_EQ(g.ex[0].unknown, 0);
		ASSERT_EQ(g.ex[0].grpc_status, H2_GRPC_NONE);
		/* the request HEADERS starts after preface+settings+ack (24+15+9) */
		ASSERT_EQ(g.ex[0].start_ns, cut <= 24 + 15 + 9 ? 20 : 10);
		ASSERT_EQ(g.ex[0].end_ns, sc == cv.s.len ? 30 : 40);
		ASSERT_EQ(g.ex[0].resp_bytes,
			  (uint64_t)(cv.s.len - 9 - 9 - 17 - 13 - 21));
		h2_conn__free(c, 50);
		ASSERT_EQ(g.n, 1); /* nothing left open */
	}
	convo_free(&cv);
}

TEST(h2_conn_many_interleaved_streams)
{
	struct convo cv;
	struct got g;
	struct h2_conn *c;
	const int n = 1000;
	char hdr[256];
	struct h2_conn_stats st;

	convo_init(&cv, true);
	for (int i = 0; i < n; i++) {
		snprintf(
			hdr, sizeof(hdr),
			":method: %s\n:scheme: http\n:authority: h%d.example\n:path: /item/%d\n",
			i % 3 ? "GET" : "POST", i % 7, i);
		headers(&cv, true, 2 * i + 1, i % 3 ? H2_F_END_STREAM : 0, hdr);
	}
	/* POST bodies, then responses in reverse order, bodies interleaved */
	for (int i = 0; i < n; i += 3)
		data(&cv, true, 2 * i + 1, H2_F_END_STREAM, 10);
	for (int i = n - 1; i >= 0; i--) {
		snprintf(hdr, sizeof(hdr), ":status: %d\n", 200 + i % 5);
		headers(&cv, false, 2 * i + 1, 0, hdr);
		data(&cv, false, 2 * i + 1, 0, 5);
	}
	for (int i = 0; i < n; i++)
		data(&cv, false, 2 * i + 1, H2_F_END_STREAM, 1);
	c = conn(&g, true);
	ASSERT_TRUE(c);
	/* chunks of 1000 bytes, as a proxy's reads would cut them */
	for (size_t o = 0; o < cv.c.len; o += 1000)
		ASSERT_EQ(h2_conn__feed(
				  c, H2_FROM_CLIENT, cv.c.b + o,
				  cv.c.len - o < 1000 ? cv.c.len - o : 1000, 1),
			  0);
	for (size_t o = 0; o < cv.s.len; o += 1000)
		ASSERT_EQ(h2_conn__feed(
				  c, H2_FROM_SERVER, cv.s.b + o,
				  cv.s.len - o < 1000 ? cv.s.len - o : 1000, 2),
			  0);
	ASSERT_EQ(g.n, n);
	for (int i = 0; i < n; i++) {
		int k = by_stream(&g, 2 * i + 1);
		char want[64];

		ASSERT_TRUE(k >= 0, "stream %d", 2 * i + 1);
		snprintf(want, sizeof(want), "/item/%d", i);
		ASSERT_STREQ(g.path[k], want);
		snprintf(want, sizeof(want), "h%d.example", i % 7);
		ASSERT_STREQ(g.auth[k], want);
		ASSERT_EQ(g.ex[k].method, i % 3 ? MM_M_GET : MM_M_POST);
		ASSERT_EQ(g.ex[k].status, 200 + i % 5);
		ASSERT_EQ(g.ex[k].unknown, 0);
	}
	h2_conn__stats(c, &st);
	ASSERT_EQ(st.exchanges, (uint64_t)n);
	ASSERT_EQ(st.unknown_fields, 0);
	ASSERT_EQ(st.header_table_size[H2_FROM_CLIENT], 4096);
	h2_conn__free(c, 3);
	convo_free(&cv);
}

TEST(h2_conn_continuation_padding_priority)
{
	struct convo cv;
	struct got g;
	struct h2_conn *c;
	uint8_t blk[1024], pl[1200];
	size_t n, p1, p2;

	convo_init(&cv, true);
	n = encode(
		cv.cenc,
		":method: GET\n:scheme: https\n:authority: cont.example\n"
		":path: /long/path/that/spans/frames\nx-a: 1111111111\nx-b: 2222222222\n",
		blk, sizeof(blk));
	p1 = n / 3;
	p2 = 2 * n / 3;
	/* HEADERS: PADDED (pad 7) + PRIORITY (5 bytes), first third only */
	pl[0] = 7;
	memcpy(pl + 1, "\x80\0\0\x03\x10", 5);
	memcpy(pl + 6, blk, p1);
	memset(pl + 6 + p1, 0, 7);
	frame(&cv.c, H2_HEADERS, H2_F_PADDED | H2_F_PRIORITY | H2_F_END_STREAM,
	      1, pl, 6 + p1 + 7);
	frame(&cv.c, H2_CONTINUATION, 0, 1, blk + p1, p2 - p1);
	frame(&cv.c, H2_CONTINUATION, H2_F_END_HEADERS, 1, blk + p2, n - p2);
	/* padded DATA in the response */
	headers(&cv, false, 1, 0, ":status: 404\n");
	pl[0] = 3;
	memset(pl + 1, 'y', 10);
	frame(&cv.s, H2_DATA, H2_F_PADDED | H2_F_END_STREAM, 1, pl, 14);
	c = conn(&g, true);
	ASSERT_TRUE(c);
	for (size_t i = 0; i < cv.c.len; i++) /* byte by byte */
		ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b + i, 1, i),
			  0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 999), 0);
	ASSERT_EQ(g.n, 1);
	ASSERT_STREQ(g.path[0], "/long/path/that/spans/frames");
	ASSERT_STREQ(g.auth[0], "cont.example");
	ASSERT_EQ(g.ex[0].status, 404);
	ASSERT_EQ(g.ex[0].req_bytes,
		  9 + 6 + p1 + 7 + 9 + (p2 - p1) + 9 + (n - p2));
	h2_conn__free(c, 0);
	convo_free(&cv);
}

TEST(h2_conn_rst_goaway_close)
{
	struct convo cv;
	struct got g;
	struct h2_conn *c;
	uint8_t rst[4] = { 0, 0, 0, 8 };            /* CANCEL */
	uint8_t ga[8] = { 0, 0, 0, 3, 0, 0, 0, 0 }; /* last stream 3, NO_ERROR */
	int k;

	convo_init(&cv, true);
	for (int sid = 1; sid <= 9; sid += 2)
		headers(&cv, true, sid, H2_F_END_STREAM,
			":method: GET\n:scheme: http\n:authority: a\n:path: /s\n");
	frame(&cv.c, H2_RST_STREAM, 0, 1, rst, 4); /* client cancels 1 */
	headers(&cv, false, 3, 0, ":status: 200\n");
	frame(&cv.s, H2_GOAWAY, 0, 0, ga, 8);     /* 5, 7, 9 not processed */
	data(&cv, false, 3, H2_F_END_STREAM, 10); /* 3 still completes */
	c = conn(&g, true);
	ASSERT_TRUE(c);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, cv.c.len, 1), 0);
	ASSERT_EQ(g.n, 1);
	ASSERT_EQ(g.ex[0].stream_id, 1);
	ASSERT_EQ(g.ex[0].flags, MM_EV_ABORTED | MM_EV_NO_RESPONSE);
	ASSERT_EQ(g.ex[0].rst_code, 8);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 2), 0);
	ASSERT_EQ(g.n, 5);
	for (int sid = 5; sid <= 9; sid += 2) {
		k = by_stream(&g, sid);
		ASSERT_TRUE(k > 0);
		ASSERT_EQ(g.ex[k].flags, MM_EV_ABORTED | MM_EV_NO_RESPONSE);
	}
	k = by_stream(&g, 3);
	ASSERT_EQ(g.ex[k].flags, 0);
	ASSERT_EQ(g.ex[k].status, 200);
	h2_conn__free(c, 0);
	ASSERT_EQ(g.n, 5);
	convo_free(&cv);
	/* close with a stream open: aborted after its response began */
	convo_init(&cv, true);
	headers(&cv, true, 1, H2_F_END_STREAM, get_a);
	headers(&cv, false, 1, 0, ":status: 200\n");
	c = conn(&g, true);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, cv.c.len, 1), 0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 2), 0);
	ASSERT_EQ(g.n, 0);
	h2_conn__free(c, 77);
	ASSERT_EQ(g.n, 1);
	ASSERT_EQ(g.ex[0].flags, MM_EV_ABORTED);
	ASSERT_EQ(g.ex[0].status, 200);
	ASSERT_EQ(g.ex[0].end_ns, 77);
	convo_free(&cv);
}

TEST(h2_conn_grpc_trailers_and_interim)
{
	struct convo cv;
	struct got g;
	struct h2_conn *c;
	int k;

	convo_init(&cv, true);
	headers(&cv, true, 1, 0,
		":method: POST\n:scheme: http\n:authority: grpc.example\n"
		":path: /pkg.Svc/Call\ncontent-type: application/grpc\nte: trailers\n");
	data(&cv, true, 1, H2_F_END_STREAM, 12);
	headers(&cv, true, 3, H2_F_END_STREAM,
		":method: POST\n:scheme: http\n:authority: grpc.example\n:path: /pkg.Svc/Fail\n");
	headers(&cv, true, 5, H2_F_END_STREAM,
		":method: GET\n:scheme: http\n:authority: a\n:path: /early-hints\n");
	/* 1: headers, message, trailers with grpc-status 5 */
	headers(&cv, false, 1, 0,
		":status: 200\ncontent-type: application/grpc\n");
	data(&cv, false, 1, 0, 20);
	headers(&cv, false, 1, H2_F_END_STREAM,
		"grpc-status: 5\ngrpc-message: not found\n");
	/* 3: Trailers-Only */
	headers(&cv, false, 3, H2_F_END_STREAM,
		":status: 200\ncontent-type: application/grpc\ngrpc-status: 14\n");
	/* 5: 103 Early Hints, then 200 */
	headers(&cv, false, 5, 0, ":status: 103\nlink: </s.css>\n");
	headers(&cv, false, 5, H2_F_END_STREAM, ":status: 204\n");
	c = conn(&g, true);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, cv.c.len, 1), 0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 2), 0);
	ASSERT_EQ(g.n, 3);
	k = by_stream(&g, 1);
	ASSERT_EQ(g.ex[k].status, 200);
	ASSERT_EQ(g.ex[k].grpc_status, 5);
	ASSERT_STREQ(g.path[k], "/pkg.Svc/Call");
	k = by_stream(&g, 3);
	ASSERT_EQ(g.ex[k].grpc_status, 14);
	k = by_stream(&g, 5);
	ASSERT_EQ(g.ex[k].status, 204);
	ASSERT_EQ(g.ex[k].grpc_status, H2_GRPC_NONE);
	h2_conn__free(c, 0);
	convo_free(&cv);
}

TEST(h2_conn_table_size_update_and_push_promise)
{
	struct convo cv;
	struct got g;
	struct h2_conn *c;
	uint8_t blk[512], pl[600];
	size_t n;
	int k;

	convo_init(&cv, true);
	headers(&cv, true, 1, H2_F_END_STREAM, get_a);
	/* the server's encoder shrinks its table: a size update leads the block */
	nghttp2_hd_deflate_change_table_size(cv.senc, 128);
	headers(&cv, false, 1, 0, ":status: 200\nx-served-by: pod-a\n");
	/* a pushed /style.css: counted, not an exchange; its block inserts */
	n = encode(cv.senc,
		   ":method: GET\n:scheme: https\n:authority: gw.example\n"
		   ":path: /style.css\nx-pushed: yes\n",
		   blk, sizeof(blk));
	memcpy(pl, "\0\0\0\2", 4);
	memcpy(pl + 4, blk, n);
	frame(&cv.s, H2_PUSH_PROMISE, H2_F_END_HEADERS, 1, pl, 4 + n);
	data(&cv, false, 1, H2_F_END_STREAM, 10);
	headers(&cv, false, 2, 0, ":status: 200\n");
	data(&cv, false, 2, H2_F_END_STREAM, 10);
	/* the next response refers to entries the push inserted */
	headers(&cv, true, 3, H2_F_END_STREAM, get_a);
	headers(&cv, false, 3, H2_F_END_STREAM,
		":status: 200\nx-pushed: yes\nx-served-by: pod-a\n");
	c = conn(&g, true);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, cv.c.len, 1), 0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 2), 0);
	ASSERT_EQ(g.n, 2);
	k = by_stream(&g, 3);
	ASSERT_TRUE(k >= 0);
	ASSERT_EQ(g.ex[k].status, 200);
	ASSERT_EQ(g.ex[k].unknown, 0);
	{
		struct h2_conn_stats st;

		h2_conn__stats(c, &st);
		ASSERT_EQ(st.push_promises, 1);
		ASSERT_EQ(st.hpack_errors, 0);
		ASSERT_EQ(st.unknown_fields, 0);
	}
	h2_conn__free(c, 0);
	convo_free(&cv);
}

/*
 * The agent starts while a connection is busy: each direction is fed from
 * a frame boundary in the middle. Streams opened before are not reported;
 * every reported field is right or unknown; later streams resolve.
 */
TEST(h2_conn_late_attach_unknown_never_wrong)
{
	const int n = 300;
	struct convo cv;
	size_t cmark = 0, smark = 0;
	struct got g;
	struct h2_conn *c;
	struct h2_conn_stats st;
	int unknown = 0, exact = 0;

	convo_init(&cv, true);
	for (int i = 0; i < n; i++) {
		char hdr[256];
		uint32_t sid = 2 * i + 1;

		if (i == 100) {
			cmark = cv.c.len;
			smark = cv.s.len;
		}
		snprintf(
			hdr, sizeof(hdr),
			":method: GET\n:scheme: http\n:authority: h%d.example\n"
			":path: /p/%d\nx-req: %d\n",
			i % 4, i % 20, i);
		headers(&cv, true, sid, H2_F_END_STREAM, hdr);
		/* responses lag two streams behind: some open across the attach */
		if (i >= 2) {
			/* x-seq churns the table: old entries get evicted */
			snprintf(hdr, sizeof(hdr),
				 ":status: %d\nx-id: %d\nx-seq: %d\n",
				 200 + (i - 2) % 3, (i - 2) % 40, i);
			headers(&cv, false, sid - 4, H2_F_END_STREAM, hdr);
		}
	}
	c = conn(&g, false);
	ASSERT_TRUE(c);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b + cmark,
				cv.c.len - cmark, 5),
		  0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b + smark,
				cv.s.len - smark, 6),
		  0);
	for (int k = 0; k < g.n; k++) {
		int i = (g.ex[k].stream_id - 1) / 2;
		char want[64];

		ASSERT_TRUE(i >= 100,
			    "stream %u opened before the attach was reported",
			    g.ex[k].stream_id);
		if (g.ex[k].unknown & H2_UNK_PATH) {
			ASSERT_STREQ(g.path[k], "");
			unknown++;
		} else {
			snprintf(want, sizeof(want), "/p/%d", i % 20);
			ASSERT_STREQ(g.path[k], want);
			exact++;
		}
		/* nghttp2 never indexes :path; :authority is indexed */
		if (g.ex[k].unknown & H2_UNK_AUTHORITY) {
			ASSERT_STREQ(g.auth[k], "");
			unknown++;
		} else {
			snprintf(want, sizeof(want), "h%d.example", i % 4);
			ASSERT_STREQ(g.auth[k], want);
		}
		if (!(g.ex[k].unknown & H2_UNK_STATUS))
			ASSERT_EQ(g.ex[k].status, 200 + i % 3);
		if (i >= 250)
			ASSERT_EQ(g.ex[k].unknown &
					  (H2_UNK_PATH | H2_UNK_METHOD |
					   H2_UNK_AUTHORITY | H2_UNK_STATUS),
				  0);
	}
	h2_conn__stats(c, &st);
	test_log(
		"late attach: %d exchanges, %d paths/authorities unknown, %d paths exact, "
		"%llu untracked, %llu unknown fields\n",
		g.n, unknown, exact, (unsigned long long)st.untracked_streams,
		(unsigned long long)st.unknown_fields);
	/* pre-attach references were met (x-req, x-id names), none was wrong */
	ASSERT_TRUE(st.unknown_fields > 0);
	ASSERT_TRUE(exact > 100);
	ASSERT_EQ(st.untracked_streams,
		  2);                /* 99's and 98's responses came after */
	ASSERT_EQ(g.n, n - 100 - 2); /* the last two never got a response */
	h2_conn__free(c, 7);
	ASSERT_EQ(g.n, n - 100);
	convo_free(&cv);
}

TEST(h2_conn_lost_bytes_never_wrong)
{
	const int n = 120;
	struct convo cv;
	struct got g;
	struct h2_conn *c;
	size_t marks[n + 1];

	convo_init(&cv, true);
	for (int i = 0; i < n; i++) {
		char hdr[256];

		marks[i] = cv.c.len;
		snprintf(
			hdr, sizeof(hdr),
			":method: GET\n:scheme: http\n:authority: lost.example\n:path: /q/%d\n",
			i % 10);
		headers(&cv, true, 2 * i + 1, H2_F_END_STREAM, hdr);
		headers(&cv, false, 2 * i + 1, H2_F_END_STREAM,
			":status: 200\n");
	}
	marks[n] = cv.c.len;
	c = conn(&g, true);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, 0, 1), 0);
	/* streams 40..59's requests are lost (ring buffer full) */
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, marks[40], 1), 0);
	h2_conn__lost(c, H2_FROM_CLIENT);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b + marks[60],
				cv.c.len - marks[60], 2),
		  0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 3), 0);
	for (int k = 0; k < g.n; k++) {
		int i = (g.ex[k].stream_id - 1) / 2;
		char want[64];

		ASSERT_TRUE(i < 40 || i >= 60);
		if (g.ex[k].unknown & H2_UNK_PATH)
			continue;
		snprintf(want, sizeof(want), "/q/%d", i % 10);
		ASSERT_STREQ(g.path[k], want);
	}
	ASSERT_EQ(g.n, 100);
	h2_conn__free(c, 0);
	convo_free(&cv);
}

TEST(h2_conn_h2c_upgrade)
{
	static const char req[] =
		"GET /up/grade HTTP/1.1\r\nHost: up.example\r\n"
		"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n"
		"HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\n";
	static const char plain[] =
		"GET / HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\n\r\n";
	static const char sw[] = "HTTP/1.1 101 Switching Protocols\r\n"
				 "Connection: Upgrade\r\nUpgrade: h2c\r\n\r\n";
	struct h2_upgrade_head up;
	struct h2_upgrade_req ur;
	struct h2_conn_opts o = { .on_exchange = on_ex };
	struct convo cv;
	struct got g = {};
	struct h2_conn *c;

	ASSERT_EQ(h2_detect__client((const uint8_t *)req, sizeof(req) - 1, &up),
		  H2_DETECT_UPGRADE);
	ASSERT_STREQ(up.method, "GET");
	ASSERT_STREQ(up.path, "/up/grade");
	ASSERT_STREQ(up.authority, "up.example");
	ASSERT_EQ(up.head_len, sizeof(req) - 1);
	ASSERT_EQ(up.body_len, 0);
	{
		static const char post[] =
			"POST /p HTTP/1.1\r\nHost: a\r\nContent-Length: 11\r\n"
			"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: websocket, h2c\r\n"
			"HTTP2-Settings: AAMAAABkAAQAoAAAAAIAAAAA\r\n\r\nhello world";
		struct h2_upgrade_head pu;

		ASSERT_EQ(h2_detect__client((const uint8_t *)post,
					    sizeof(post) - 1, &pu),
			  H2_DETECT_UPGRADE);
		ASSERT_EQ(pu.body_len, 11);
		ASSERT_EQ(pu.head_len + pu.body_len, sizeof(post) - 1);
		ASSERT_STREQ(pu.method, "POST");
	}
	ASSERT_EQ(h2_detect__client((const uint8_t *)plain, sizeof(plain) - 1,
				    NULL),
		  H2_DETECT_NO);
	ASSERT_EQ(h2_detect__client((const uint8_t *)H2_PREFACE, 10, NULL),
		  H2_DETECT_MORE);
	ASSERT_EQ(h2_detect__client((const uint8_t *)H2_PREFACE, 24, NULL),
		  H2_DETECT_PREFACE);
	ASSERT_EQ(h2_detect__switched((const uint8_t *)sw, 20), 0);
	ASSERT_EQ(h2_detect__switched((const uint8_t *)sw, sizeof(sw) - 1),
		  (long)sizeof(sw) - 1);
	ASSERT_EQ(h2_detect__switched(
			  (const uint8_t *)"HTTP/1.1 200 OK\r\n\r\n", 19),
		  -1);

	ur = (struct h2_upgrade_req){ up.method, up.path, up.authority, 100,
				      up.head_len };
	o.upgrade = &ur;
	o.ctx = &g;
	c = h2_conn__new(&o);
	ASSERT_TRUE(c);
	/* after the 101: the client's preface, the server's frames on stream 1 */
	convo_init(&cv, true);
	headers(&cv, false, 1, 0, ":status: 200\n");
	data(&cv, false, 1, H2_F_END_STREAM, 42);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, cv.c.b, cv.c.len, 150), 0);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_SERVER, cv.s.b, cv.s.len, 200), 0);
	ASSERT_EQ(g.n, 1);
	ASSERT_EQ(g.ex[0].stream_id, 1);
	ASSERT_STREQ(g.path[0], "/up/grade");
	ASSERT_STREQ(g.auth[0], "up.example");
	ASSERT_EQ(g.ex[0].status, 200);
	ASSERT_EQ(g.ex[0].start_ns, 100);
	ASSERT_EQ(g.ex[0].end_ns, 200);
	h2_conn__free(c, 0);
	convo_free(&cv);
}

TEST(h2_conn_not_http2)
{
	struct got g;
	struct h2_conn *c = conn(&g, true);
	static const char h1[] = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";

	ASSERT_TRUE(c);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, h1, sizeof(h1) - 1, 1),
		  -EPROTO);
	ASSERT_EQ(h2_conn__feed(c, H2_FROM_CLIENT, h1, sizeof(h1) - 1, 1),
		  -EPROTO);
	h2_conn__free(c, 0);
	ASSERT_EQ(g.n, 0);
}

/*
 * Untrusted bytes: a real conversation with random bits flipped, cut and
 * lost, fed in random chunks, from the start and mid-way. Nothing may
 * crash, overrun or leak (run under ASan once per change). A flipped bit
 * is a different but valid encoding as often as not (another static index,
 * another Huffman code), so values are not checked here; the late-join and
 * loss tests above check them.
 */
static void count_ex(void *ctx, const struct h2_exchange *ex)
{
	int *n = ctx;

	(*n)++;
	if (strlen(ex->path) > 4096 || strlen(ex->authority) > 4096)
		(*n) = -1000000;
}

TEST(h2_conn_mutated_bytes_are_safe)
{
	struct convo cv;
	unsigned seed = 42;
	int got = 0;

	convo_init(&cv, true);
	for (int i = 0; i < 40; i++) {
		char hdr[256];

		snprintf(
			hdr, sizeof(hdr),
			":method: GET\n:scheme: http\n:authority: m.example\n:path: /m/%d\n"
			"x-k: v%d\n",
			i % 7, i);
		headers(&cv, true, 2 * i + 1, H2_F_END_STREAM, hdr);
		headers(&cv, false, 2 * i + 1, 0, ":status: 200\nx-r: r\n");
		data(&cv, false, 2 * i + 1, H2_F_END_STREAM, i * 3);
	}
	for (int round = 0; round < 3000; round++) {
		struct h2_conn_opts o = { .from_start = round & 1,
					  .on_exchange = count_ex,
					  .ctx = &got };
		struct h2_conn *c = h2_conn__new(&o);
		struct wire w[2] = { cv.c, cv.s };
		uint8_t *copy[2];

		ASSERT_TRUE(c);
		for (int d = 0; d < 2; d++) {
			copy[d] = malloc(w[d].len);
			memcpy(copy[d], w[d].b, w[d].len);
			for (int k = 0; k < 1 + round % 5; k++) {
				seed = seed * 1103515245 + 12345;
				copy[d][(seed >> 8) % w[d].len] ^=
					1u << (seed % 8);
			}
		}
		for (size_t off[2] = { 0, 0 };
		     off[0] < w[0].len || off[1] < w[1].len;) {
			int d;
			size_t n;

			seed = seed * 1103515245 + 12345;
			d = off[0] >= w[0].len   ? 1
			    : off[1] >= w[1].len ? 0
						 : (seed >> 4) & 1;
			n = 1 + (seed >> 10) % 300;
			if (n > w[d].len - off[d])
				n = w[d].len - off[d];
			if ((seed >> 20) % 50 == 0)
				h2_conn__lost(c,
					      d); /* and skip what was lost */
			else
				h2_conn__feed(c, d, copy[d] + off[d], n, round);
			off[d] += n;
		}
		h2_conn__free(c, round);
		free(copy[0]);
		free(copy[1]);
	}
	test_log("%d exchanges out of mutated conversations\n", got);
	ASSERT_TRUE(got > 3000, "%d", got);
	convo_free(&cv);
}

/* ---- agent/pipeline/h2_feed.c: decoders behind BPF's MM_EVT_H2_* events ------- */

struct feed_got {
	int n;
	struct exchange e[8];
	char head[8][600];
	bool trunc[8];
};

static void on_feed(void *ctx, const struct exchange *e, const char *head,
		    size_t len, bool trunc)
{
	struct feed_got *g = ctx;

	if (g->n >= 8)
		return;
	g->e[g->n] = *e;
	snprintf(g->head[g->n], sizeof(g->head[0]), "%.*s", (int)len, head);
	g->trunc[g->n++] = trunc;
}

/* the bytes of w from *off as MM_EVT_H2_DATA events of at most step bytes */
static void feed_bytes(struct h2_feed *f, uint64_t conn, uint8_t dir,
		       const struct wire *w, size_t *off, size_t step)
{
	uint8_t buf[sizeof(struct mm_data_event) + 64];
	struct mm_data_event *e = (void *)buf;

	while (*off < w->len) {
		size_t n = w->len - *off < step ? w->len - *off : step;

		memset(e, 0, sizeof(*e));
		e->type = MM_EVT_H2_DATA;
		e->dir = dir;
		e->flags = MM_DATA_FROM_START;
		e->len = n;
		e->tgid = 7;
		e->route_gen = 3;
		e->conn_id = conn;
		e->ts_ns = 1000 + *off;
		memcpy(e->data, w->b + *off, n);
		h2_feed__event(f, buf, sizeof(*e) + n);
		*off += n;
	}
}

static void feed_close(struct h2_feed *f, uint64_t conn, uint8_t flags)
{
	struct mm_data_event e = {
		.type = MM_EVT_H2_CLOSE,
		.flags = flags,
		.conn_id = conn,
		.ts_ns = 99999,
	};

	h2_feed__event(f, &e, sizeof(e));
}

TEST(h2_feed_two_connections_interleaved_heads_for_routes)
{
	struct feed_got g = {};
	struct h2_feed *f = h2_feed__new(on_feed, &g);
	struct convo a, b;
	size_t ac = 0, as = 0, bc = 0, bs = 0;
	struct h2_feed_stats st;

	convo_init(&a, true);
	convo_init(&b, true);
	headers(&a, true, 1, H2_F_END_STREAM,
		":method: GET\n:scheme: https\n:path: /feature\n"
		":authority: canary.example.com\nx-canary: 1\n");
	headers(&b, true, 3, 0,
		":method: POST\n:scheme: http\n:path: /v1/orders\n"
		":authority: api.example.com\n");
	data(&b, true, 3, H2_F_END_STREAM, 10);
	headers(&a, false, 1, H2_F_END_STREAM, ":status: 200\n");
	headers(&b, false, 3, 0, ":status: 201\n");
	data(&b, false, 3, H2_F_END_STREAM, 5);
	/* both connections' events interleaved, split every 7 bytes */
	while (ac < a.c.len || bc < b.c.len) {
		size_t a0 = ac, b0 = bc;

		feed_bytes(f, 11, MM_DIR_FROM_CLIENT, &a.c, &ac, 7);
		feed_bytes(f, 22, MM_DIR_FROM_CLIENT, &b.c, &bc, 7);
		ASSERT_TRUE(ac > a0 || bc > b0, "no progress");
	}
	feed_bytes(f, 22, MM_DIR_FROM_SERVER, &b.s, &bs, 5);
	feed_bytes(f, 11, MM_DIR_FROM_SERVER, &a.s, &as, 64);
	ASSERT_EQ(g.n, 2);
	/* stream 3 of connection 22 ended first */
	ASSERT_EQ(g.e[0].conn_id, 22);
	ASSERT_EQ(g.e[0].req_seq, 3);
	ASSERT_EQ(g.e[0].status, 201);
	ASSERT_EQ(g.e[0].method, MM_M_POST);
	ASSERT_EQ(g.e[0].route_id, MM_ROUTE_DEFER);
	ASSERT_EQ(g.e[0].route_gen, 3);
	ASSERT_EQ(g.e[0].leg, MM_LEG_DOWNSTREAM);
	ASSERT_STREQ(
		g.head[0],
		"POST /v1/orders HTTP/1.1\r\nhost: api.example.com\r\n\r\n");
	ASSERT_EQ(g.e[1].conn_id, 11);
	ASSERT_EQ(g.e[1].req_seq, 1);
	ASSERT_EQ(g.e[1].status, 200);
	/* the header a route may match on is in the head */
	ASSERT_STREQ(g.head[1],
		     "GET /feature HTTP/1.1\r\nhost: canary.example.com\r\n"
		     "x-canary: 1\r\n\r\n");
	ASSERT_TRUE(!g.trunc[0] && !g.trunc[1], "heads complete");
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.conns, 2);
	ASSERT_EQ(st.open, 2);
	feed_close(f, 11, 0);
	feed_close(f, 22, 0);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.open, 0);
	ASSERT_EQ(g.n, 2);
	h2_feed__free(f, 0);
	convo_free(&a);
	convo_free(&b);
}

/* the trailers' grpc-status reaches the exchange record; no trailers: none */
TEST(h2_feed_grpc_status_in_exchange)
{
	struct feed_got g = {};
	struct h2_feed *f = h2_feed__new(on_feed, &g);
	struct convo a;
	size_t c = 0, s = 0;

	convo_init(&a, true);
	headers(&a, true, 1, H2_F_END_STREAM,
		":method: POST\n:scheme: http\n:authority: grpc.example\n"
		":path: /pkg.Svc/Fail\ncontent-type: application/grpc\n");
	headers(&a, true, 3, H2_F_END_STREAM,
		":method: GET\n:scheme: http\n:authority: a.test\n:path: /\n");
	headers(&a, false, 1, H2_F_END_STREAM,
		":status: 200\ncontent-type: application/grpc\ngrpc-status: 14\n");
	headers(&a, false, 3, H2_F_END_STREAM, ":status: 200\n");
	feed_bytes(f, 5, MM_DIR_FROM_CLIENT, &a.c, &c, 64);
	feed_bytes(f, 5, MM_DIR_FROM_SERVER, &a.s, &s, 64);
	if (ASSERT_EQ(g.n, 2)) {
		ASSERT_EQ(g.e[0].req_seq, 1);
		ASSERT_EQ(g.e[0].grpc_status, 14);
		ASSERT_EQ(g.e[1].req_seq, 3);
		ASSERT_EQ(g.e[1].grpc_status, EXCHANGE_GRPC_NONE);
	}
	feed_close(f, 5, 0);
	h2_feed__free(f, 0);
	convo_free(&a);
}

TEST(h2_feed_close_aborts_loss_drops)
{
	struct feed_got g = {};
	struct h2_feed *f = h2_feed__new(on_feed, &g);
	struct convo a;
	size_t off = 0;
	struct h2_feed_stats st;

	convo_init(&a, true);
	headers(&a, true, 1, H2_F_END_STREAM,
		":method: GET\n:scheme: https\n:path: /a\n:authority: x.test\n");
	feed_bytes(f, 1, MM_DIR_FROM_CLIENT, &a.c, &off, 64);
	off = 0;
	feed_bytes(f, 2, MM_DIR_FROM_CLIENT, &a.c, &off, 64);
	/* closed with the stream open: one aborted exchange, as for HTTP/1 */
	feed_close(f, 1, 0);
	ASSERT_EQ(g.n, 1);
	ASSERT_TRUE(g.e[0].flags & MM_EV_ABORTED, "aborted");
	ASSERT_TRUE(g.e[0].flags & MM_EV_NO_RESPONSE, "no response");
	/* bytes lost: the open stream is not an exchange, it is counted */
	feed_close(f, 2, MM_DATA_LOST);
	ASSERT_EQ(g.n, 1);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.lost_conns, 1);
	ASSERT_EQ(st.lost_streams, 1);
	/* not HTTP/2 at all: refused, nothing reported */
	{
		struct wire w = {};

		put(&w, "GET / HTTP/1.1\r\n\r\n", 18);
		off = 0;
		feed_bytes(f, 3, MM_DIR_FROM_CLIENT, &w, &off, 64);
		free(w.b);
	}
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.not_h2, 1);
	/* kept (refused) until its close: no decoder per later chunk */
	ASSERT_EQ(st.open, 1);
	off = 0;
	{
		struct wire w = {};

		put(&w, "more bytes of it", 16);
		feed_bytes(f, 3, MM_DIR_FROM_CLIENT, &w, &off, 64);
		free(w.b);
	}
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.conns, 3);
	ASSERT_EQ(st.not_h2, 1);
	feed_close(f, 3, 0);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.open, 0);
	/* a connection whose close never came is forgotten when idle */
	off = 0;
	feed_bytes(f, 4, MM_DIR_FROM_CLIENT, &a.c, &off, 64);
	ASSERT_EQ(h2_feed__expire(f, 1000 + 10, 1000000), 0);
	ASSERT_EQ(h2_feed__expire(f, 5000000, 1000000), 1);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.open, 0);
	ASSERT_EQ(st.lost_streams, 2);
	ASSERT_EQ(g.n, 1);
	h2_feed__free(f, 0);
	convo_free(&a);
}

/*
 * The agent's queue lost a record of a connection (H2_FEED_GAP): its
 * decoder ends as lost and its later bytes, valid frames or not, are
 * ignored until BPF's close; a connection with no decoder yet too.
 */
TEST(h2_feed_gap_ends_the_decoder_and_ignores_the_rest)
{
	struct feed_got g = {};
	struct h2_feed *f = h2_feed__new(on_feed, &g);
	struct convo a;
	size_t off = 0;
	struct h2_feed_stats st;

	convo_init(&a, true);
	headers(&a, true, 1, 0,
		":method: POST\n:scheme: https\n:path: /a\n:authority: x.test\n");
	feed_bytes(f, 1, MM_DIR_FROM_CLIENT, &a.c, &off, 64);
	feed_close(f, 1, MM_DATA_LOST | H2_FEED_GAP);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.lost_conns, 1);
	ASSERT_EQ(st.lost_streams, 1);
	/* the stream's end and a whole new stream after the gap: ignored */
	data(&a, true, 1, H2_F_END_STREAM, 10);
	headers(&a, true, 3, H2_F_END_STREAM,
		":method: GET\n:scheme: https\n:path: /b\n:authority: x.test\n");
	headers(&a, false, 1, H2_F_END_STREAM, ":status: 200\n");
	headers(&a, false, 3, H2_F_END_STREAM, ":status: 200\n");
	feed_bytes(f, 1, MM_DIR_FROM_CLIENT, &a.c, &off, 64);
	off = 0;
	feed_bytes(f, 1, MM_DIR_FROM_SERVER, &a.s, &off, 64);
	/* another gap close of it (the queue still full): counted once */
	feed_close(f, 1, MM_DATA_LOST | H2_FEED_GAP);
	/* a gap before any decoder: the connection's bytes are ignored too */
	feed_close(f, 2, MM_DATA_LOST | H2_FEED_GAP);
	off = 0;
	feed_bytes(f, 2, MM_DIR_FROM_CLIENT, &a.c, &off, 64);
	ASSERT_EQ(g.n, 0);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.lost_conns, 2);
	ASSERT_EQ(st.lost_streams, 1);
	ASSERT_EQ(st.not_h2, 0);
	ASSERT_EQ(st.open, 2);
	/* BPF's closes end them, lost or not, without counting again */
	feed_close(f, 1, 0);
	feed_close(f, 2, MM_DATA_LOST);
	h2_feed__stats(f, &st);
	ASSERT_EQ(st.open, 0);
	ASSERT_EQ(st.lost_conns, 2);
	ASSERT_EQ(g.n, 0);
	h2_feed__free(f, 0);
	convo_free(&a);
}
