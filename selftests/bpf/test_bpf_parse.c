// SPDX-License-Identifier: Apache-2.0
/*
 * The data path's HTTP/1.x parser and exchange bookkeeping, run in the
 * kernel by BPF_PROG_TEST_RUN through the real capture_io() (see
 * progs/parse_test.bpf.c). Each test is one or more connections fed
 * "syscalls" and checked on the ring-buffer events and mm_stats counters:
 * the figures the agent exports. Downstream leg unless said otherwise: the
 * proxy reads requests and writes responses.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "selftests/bpf/bpf_fixture.h"
#include "selftests/unit/test.h"

#define S(lit) lit, sizeof(lit) - 1
#define EV(i)  FX_EV(i)

#define REQ_GET  "GET /a HTTP/1.1\r\nHost: x.test\r\n\r\n"
#define RESP_200 "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"

enum { DOWN = 0, UP = 1 };

/* What must not depend on how the bytes were split into syscalls. */
static bool same_exchange(const struct mm_http_event *a,
			  const struct mm_http_event *b)
{
	return a->type == b->type && a->leg == b->leg &&
	       a->method == b->method && a->flags == b->flags &&
	       a->status == b->status && a->route_id == b->route_id &&
	       a->req_seq == b->req_seq && a->req_bytes == b->req_bytes &&
	       a->resp_bytes == b->resp_bytes;
}

static void log_event(const char *what, const struct mm_http_event *e)
{
	test_log(
		"%s: type %u leg %u method %u flags 0x%x status %u seq %u route %#x req %llu resp %llu\n",
		what, e->type, e->leg, e->method, e->flags, e->status,
		e->req_seq, e->route_id, (unsigned long long)e->req_bytes,
		(unsigned long long)e->resp_bytes);
}

/*
 * One request then its response on a fresh downstream connection, each cut
 * into reads/writes of CHUNK bytes; returns the number of events and leaves
 * them in fx_ev.
 */
static int exchange(const char *req, size_t rl, size_t rchunk, const char *resp,
		    size_t sl, size_t schunk)
{
	if (fx_reset() || fx_open(0, MM_ROLE_UNKNOWN) ||
	    fx_chunks(0, 1, req, rl, rchunk) ||
	    fx_chunks(0, 0, resp, sl, schunk))
		return -1;
	return fx_drain();
}

TEST(bpf_parse_get_200)
{
	struct mm_conn c;

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(REQ_GET)));
	REQUIRE(ASSERT_EQ(fx_drain(),
			  0)); /* nothing before the response ends */
	OK(fx_buf(0, 0, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->type, MM_EVT_EXCHANGE));
	REQUIRE(ASSERT_EQ(EV(0)->leg, MM_LEG_DOWNSTREAM));
	REQUIRE(ASSERT_EQ(EV(0)->method, MM_M_GET));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->flags, 0));
	REQUIRE(ASSERT_EQ(EV(0)->req_seq, 0));
	REQUIRE(ASSERT_EQ(EV(0)->tgid, getpid()));
	REQUIRE(ASSERT_EQ(EV(0)->req_bytes, sizeof(REQ_GET) - 1));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(RESP_200) - 1));
	/* no route table loaded: generation 0 has no catch-all */
	REQUIRE(ASSERT_EQ(EV(0)->route_id, MM_ROUTE_UNMATCHED));
	REQUIRE(ASSERT_TRUE(EV(0)->conn_id != 0));
	REQUIRE(ASSERT_TRUE(EV(0)->start_ns &&
			    EV(0)->start_ns <= EV(0)->end_ns));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_EVENTS), 1));
	OK(fx_conn(0, &c));
	REQUIRE(ASSERT_EQ(c.count, 0));
	REQUIRE(ASSERT_EQ(c.req.state, PS_START));
	REQUIRE(ASSERT_EQ(c.resp.state, PS_START));
	/* a close with nothing pending reports nothing */
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_CONNS_CLOSED), 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 0));
}

/* Any split, down to one byte per syscall, parses as one read. */
TEST(bpf_parse_split_anywhere)
{
	static const char req[] =
		"POST /upload/x?y=1 HTTP/1.1\r\n"
		"Host: Split.Example:8080\r\n"
		"Content-Length: 11\r\n"
		"X-Long-Header: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n"
		"\r\nhello world";
	static const char resp[] = "HTTP/1.1 201 Created\r\n"
				   "Transfer-Encoding: chunked\r\n\r\n"
				   "4\r\nwiki\r\n5;a=b\r\npedia\r\n0\r\n"
				   "Trailer-X: y\r\n\r\n";
	struct mm_http_event ref;
	size_t rl = sizeof(req) - 1, sl = sizeof(resp) - 1;

	REQUIRE(ASSERT_EQ(exchange(req, rl, rl, resp, sl, sl), 1));
	ref = *EV(0);
	REQUIRE(ASSERT_EQ(ref.method, MM_M_POST));
	REQUIRE(ASSERT_EQ(ref.status, 201));
	REQUIRE(ASSERT_EQ(ref.req_bytes, rl));
	REQUIRE(ASSERT_EQ(ref.resp_bytes, sl));
	REQUIRE(ASSERT_EQ(ref.flags, 0));
	/* every chunk size, both directions */
	for (size_t ch = 1; ch < rl || ch < sl; ch++) {
		REQUIRE(ASSERT_EQ(exchange(req, rl, ch, resp, sl, ch), 1));
		if (!same_exchange(EV(0), &ref)) {
			log_event("one read", &ref);
			log_event("split", EV(0));
			REQUIRE(ASSERT_TRUE(0, "split every %zu bytes differs",
					    ch));
		}
	}
	/* one cut at every position: two reads, two writes */
	for (size_t cut = 1; cut < rl || cut < sl; cut++) {
		size_t rc = cut < rl ? cut : rl, sc = cut < sl ? cut : sl;

		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_buf(0, 1, req, rc));
		if (rc < rl)
			OK(fx_buf(0, 1, req + rc, rl - rc));
		OK(fx_buf(0, 0, resp, sc));
		if (sc < sl)
			OK(fx_buf(0, 0, resp + sc, sl - sc));
		REQUIRE(ASSERT_EQ(fx_drain(), 1));
		REQUIRE(ASSERT_TRUE(same_exchange(EV(0), &ref), "cut at %zu",
				    cut));
	}
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 0));
}

TEST(bpf_parse_keepalive)
{
	static const char post[] = "POST /p HTTP/1.1\r\nHost: a\r\n"
				   "Content-Length: 3\r\n\r\nabc";
	static const char del[] = "DELETE /d/1 HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char r201[] =
		"HTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok";
	static const char r404[] =
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(fx_buf(0, 0, S(RESP_200)));
	OK(fx_buf(0, 1, S(post)));
	OK(fx_buf(0, 0, S(r201)));
	OK(fx_buf(0, 1, S(del)));
	OK(fx_buf(0, 0, S(r404)));
	REQUIRE(ASSERT_EQ(fx_drain(), 3));
	for (int i = 0; i < 3; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->req_seq, i));
		REQUIRE(ASSERT_EQ(EV(i)->conn_id, EV(0)->conn_id));
		REQUIRE(ASSERT_EQ(EV(i)->flags, 0));
	}
	REQUIRE(ASSERT_EQ(EV(0)->method, MM_M_GET));
	REQUIRE(ASSERT_EQ(EV(1)->method, MM_M_POST));
	REQUIRE(ASSERT_EQ(EV(2)->method, MM_M_DELETE));
	REQUIRE(ASSERT_EQ(EV(1)->status, 201));
	REQUIRE(ASSERT_EQ(EV(2)->status, 404));
	REQUIRE(ASSERT_EQ(EV(1)->req_bytes, sizeof(post) - 1));
	REQUIRE(ASSERT_EQ(EV(2)->resp_bytes, sizeof(r404) - 1));
	REQUIRE(ASSERT_TRUE(EV(0)->end_ns <= EV(1)->start_ns));
}

/* N requests "GET /p<i>" in one buffer (heads only). */
static size_t pipeline(char *buf, size_t size, int from, int n)
{
	size_t off = 0;

	for (int i = from; i < from + n; i++)
		off += snprintf(buf + off, size - off,
				"GET /p%d HTTP/1.1\r\nHost: a\r\n\r\n", i);
	return off;
}

static int respond(unsigned int slot, int status)
{
	char r[128];
	int n = snprintf(r, sizeof(r),
			 "HTTP/1.1 %d X\r\nContent-Length: 1\r\n\r\nz", status);

	return fx_buf(slot, 0, r, n);
}

/* 32 in flight: every one timed, in order. */
TEST(bpf_parse_pipeline_depth)
{
	char buf[4096];
	size_t n = pipeline(buf, sizeof(buf), 0, MM_PIPELINE_DEPTH);

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, buf, n));
	for (int i = 0; i < MM_PIPELINE_DEPTH; i++)
		OK(respond(0, 400 + i)); /* 2xx would hit 204 */
	REQUIRE(ASSERT_EQ(fx_drain(), MM_PIPELINE_DEPTH));
	for (int i = 0; i < MM_PIPELINE_DEPTH; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->req_seq, i));
		REQUIRE(ASSERT_EQ(EV(i)->status, 400 + i));
		REQUIRE(ASSERT_EQ(EV(i)->flags, 0));
	}
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_PIPELINE_FULL), 0));
}

/* Past 32: still every request reported, the extra ones untracked. */
TEST(bpf_parse_pipeline_past_depth)
{
	char buf[8192];
	size_t n;
	int total = MM_PIPELINE_DEPTH + 8;

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	n = pipeline(buf, sizeof(buf), 0, 20);
	OK(fx_buf(0, 1, buf, n));
	n = pipeline(buf, sizeof(buf), 20, total - 20);
	OK(fx_buf(0, 1, buf, n));
	for (int i = 0; i < total; i++)
		OK(respond(0, 400 + i)); /* 2xx would hit 204 */
	REQUIRE(ASSERT_EQ(fx_drain(), total));
	for (int i = 0; i < total; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->type, MM_EVT_EXCHANGE));
		REQUIRE(ASSERT_EQ(EV(i)->status,
				  400 + i)); /* responses stay in order */
		if (i < MM_PIPELINE_DEPTH) {
			REQUIRE(ASSERT_EQ(EV(i)->flags, 0));
			REQUIRE(ASSERT_EQ(EV(i)->req_seq, i));
		} else {
			REQUIRE(ASSERT_EQ(EV(i)->flags, MM_EV_UNTRACKED));
			/* past the depth the route is kept (this table has
			 * none: unmatched), with its request number */
			REQUIRE(ASSERT_EQ(EV(i)->route_id, MM_ROUTE_UNMATCHED));
			REQUIRE(ASSERT_EQ(EV(i)->req_seq, i));
		}
	}
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_PIPELINE_FULL), 8));
	/* and the connection is back to tracked requests */
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(respond(0, 299));
	REQUIRE(ASSERT_EQ(fx_drain(), total + 1));
	REQUIRE(ASSERT_EQ(EV(total)->flags, 0));
	REQUIRE(ASSERT_EQ(EV(total)->req_seq, total));
}

/* The connection closes with 37 of 40 unanswered: all 40 reported. */
TEST(bpf_parse_pipeline_past_depth_close)
{
	char buf[8192];
	size_t n = pipeline(buf, sizeof(buf), 0, 40);
	int aborted = 0, untracked = 0;

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, buf, n));
	for (int i = 0; i < 3; i++)
		OK(respond(0, 200));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 40));
	for (int i = 0; i < 40; i++) {
		if (EV(i)->flags & MM_EV_ABORTED) {
			aborted++;
			REQUIRE(ASSERT_EQ(EV(i)->status, 0));
			REQUIRE(ASSERT_TRUE(EV(i)->flags & MM_EV_NO_RESPONSE));
		}
		untracked += !!(EV(i)->flags & MM_EV_UNTRACKED);
	}
	REQUIRE(ASSERT_EQ(aborted, 37));
	REQUIRE(ASSERT_EQ(untracked, 8));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_ABORTED), 37));
}

/* Request I of the sliding test: HEAD every third, else POST with I body bytes. */
static size_t sliding_req(char *buf, size_t size, int i)
{
	if (i % 3 == 0)
		return snprintf(buf, size,
				"HEAD /h%d HTTP/1.1\r\nHost: a\r\n\r\n", i);
	return snprintf(
		buf, size,
		"POST /p%d HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n%.*s",
		i, i, i, "0123456789abcdefghijklmnopqrstuvwxyz");
}

/* Requests FROM..TO-1 of the sliding test in one read. */
static int sliding_send(int from, int to)
{
	char buf[4096];
	size_t n = 0;

	for (int i = from; i < to; i++)
		n += sliding_req(buf + n, sizeof(buf) - n, i);
	return fx_buf(0, 1, buf, n);
}

/* The response to request I: a HEAD's has a Content-Length and no body. */
static int sliding_respond(int i)
{
	char r[128];
	int n = snprintf(r, sizeof(r),
			 "HTTP/1.1 %d X\r\nContent-Length: 4\r\n\r\n%s",
			 400 + i, i % 3 == 0 ? "" : "body");

	return fx_buf(0, 0, r, n);
}

/*
 * Past the slots kept in the connection state (MM_SLOTS_INLINE) requests
 * wait in mm_conn_exts while others arrive and are answered: each keeps its
 * own method (a HEAD's response has no body: a slot mixed up would frame
 * the next response wrong), request bytes and number; the entry goes with
 * the connection.
 */
TEST(bpf_parse_pipeline_sliding)
{
	static const int steps[][2] = {
		/* requests sent, then answered */
		{ 10, 3 },
		{ 20, 15 },
		{ 23, 16 },
		{ 30, 30 },
	};
	char one[256];
	struct mm_conn c;
	int sent = 0, answered = 0, ext_fd;
	char ext[sizeof(struct mm_conn_ext)];

	OK(fx_reset());
	ext_fd = fx_map_fd("mm_conn_exts");
	REQUIRE(ASSERT_TRUE(ext_fd >= 0));
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	for (unsigned int k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
		OK(sliding_send(sent, steps[k][0]));
		sent = steps[k][0];
		OK(fx_conn(0, &c));
		REQUIRE(ASSERT_EQ(c.count, sent - answered));
		REQUIRE(ASSERT_EQ(c.xcount, c.count > MM_SLOTS_INLINE
						    ? c.count - MM_SLOTS_INLINE
						    : 0));
		for (; answered < steps[k][1]; answered++)
			OK(sliding_respond(answered));
	}
	OK(fx_conn(0, &c));
	REQUIRE(ASSERT_EQ(c.count, 0));
	REQUIRE(ASSERT_EQ(c.has_ext, 1));
	REQUIRE(ASSERT_EQ(bpf_map_lookup_elem(ext_fd, &c.conn_id, ext), 0));
	REQUIRE(ASSERT_EQ(fx_drain(), 30));
	for (int i = 0; i < 30; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->req_seq, i));
		REQUIRE(ASSERT_EQ(EV(i)->status, 400 + i));
		REQUIRE(ASSERT_EQ(EV(i)->flags, 0));
		REQUIRE(ASSERT_EQ(EV(i)->method,
				  i % 3 ? MM_M_POST : MM_M_HEAD));
		REQUIRE(ASSERT_EQ(EV(i)->req_bytes,
				  sliding_req(one, sizeof(one), i)));
	}
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_PIPELINE_FULL), 0));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(bpf_map_lookup_elem(ext_fd, &c.conn_id, ext),
			  -ENOENT));
}

/* A request cut by garbage while deep: the ones before it keep their order. */
TEST(bpf_parse_pipeline_garbage_deep)
{
	static const char bad[] =
		"GEt /x HTTP/1.1\r\n\r\n"; /* a method is upper case */
	struct mm_conn c;

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(sliding_send(0, 7));
	OK(fx_buf(0, 1, S(bad)));
	OK(fx_conn(0, &c));
	REQUIRE(ASSERT_EQ(c.count, 7));
	REQUIRE(ASSERT_EQ(c.xcount, 7 - MM_SLOTS_INLINE));
	for (int i = 0; i < 7; i++)
		OK(sliding_respond(i));
	REQUIRE(ASSERT_EQ(fx_drain(), 7));
	for (int i = 0; i < 7; i++) {
		REQUIRE(ASSERT_EQ(EV(i)->req_seq, i));
		REQUIRE(ASSERT_EQ(EV(i)->status, 400 + i));
		REQUIRE(ASSERT_EQ(EV(i)->method,
				  i % 3 ? MM_M_POST : MM_M_HEAD));
	}
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 7));
}

/* Past 32 + 255 nothing is reported any more, but every loss is counted. */
TEST(bpf_parse_pipeline_lost_counted)
{
	char buf[4096];
	int total = 300, sent = 0;

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	while (sent < total) {
		int k = total - sent < 50 ? total - sent : 50;
		size_t n = pipeline(buf, sizeof(buf), sent, k);

		OK(fx_buf(0, 1, buf, n));
		sent += k;
	}
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), MM_PIPELINE_DEPTH + 255));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_PIPELINE_LOST),
			  total - MM_PIPELINE_DEPTH - 255));
	REQUIRE(ASSERT_EQ(fx_drain() + fx_stat(MM_STAT_PIPELINE_LOST), total));
}

TEST(bpf_parse_chunked_both_ways)
{
	static const char req[] =
		"POST /c HTTP/1.1\r\nHost: a\r\n"
		"Transfer-Encoding: gzip, chunked\r\n\r\n"
		"5\r\nhello\r\n"
		"1A;name=val\r\nabcdefghijklmnopqrstuvwxyz\r\n"
		"0\r\nX-Checksum: 1\r\nX-Other: 2\r\n\r\n";
	static const char resp[] =
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: Chunked\r\n\r\n"
		"3\r\nabc\r\n0\r\nTrailer: t\r\n\r\n";
	char big[2 * MM_SCRATCH + 200];
	size_t n;

	for (size_t ch = 1; ch <= sizeof(req); ch += ch < 8 ? 1 : 13) {
		REQUIRE(ASSERT_EQ(exchange(S(req), ch, S(resp), ch), 1));
		REQUIRE(ASSERT_EQ(EV(0)->status, 200));
		REQUIRE(ASSERT_EQ(EV(0)->req_bytes, sizeof(req) - 1));
		REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(resp) - 1));
		REQUIRE(ASSERT_EQ(EV(0)->flags, 0));
	}
	/* keep-alive after a chunked message, chunk bigger than a window */
	OK(fx_buf(0, 1, S(REQ_GET)));
	n = snprintf(
		big, sizeof(big),
		"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n",
		MM_SCRATCH + 100);
	memset(big + n, 'b', MM_SCRATCH + 100);
	n += MM_SCRATCH + 100;
	n += snprintf(big + n, sizeof(big) - n, "\r\n0\r\n\r\n");
	OK(fx_buf(0, 0, big, n));
	REQUIRE(ASSERT_EQ(fx_drain(), 2));
	REQUIRE(ASSERT_EQ(EV(1)->resp_bytes, n));
	REQUIRE(ASSERT_EQ(EV(1)->req_seq, 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 0));
}

TEST(bpf_parse_content_length_bodies)
{
	static char body[200000];
	char head[256];
	size_t hl, total;

	memset(body, 'x', sizeof(body));
	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	hl = snprintf(
		head, sizeof(head),
		"PUT /f HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n",
		3000);
	OK(fx_buf(0, 1, head, hl));
	OK(fx_buf(0, 1, body, 1000));
	OK(fx_buf(0, 1, body, 2000));
	hl = snprintf(head, sizeof(head),
		      "HTTP/1.1 200 OK\r\ncontent-length:  %zu \r\n\r\n",
		      sizeof(body));
	total = hl + sizeof(body);
	OK(fx_buf(0, 0, head, hl));
	OK(fx_buf(0, 0, body, 65536));
	REQUIRE(ASSERT_EQ(fx_drain(), 0)); /* body not complete yet */
	OK(fx_buf(0, 0, body, sizeof(body) - 65536 - 1));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_buf(0, 0, body, 1));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->method, MM_M_PUT));
	REQUIRE(ASSERT_EQ(
		EV(0)->req_bytes,
		3000 + strlen("PUT /f HTTP/1.1\r\nHost: a\r\nContent-Length: 3000\r\n\r\n")));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, total));
	/* request body and next request in one read */
	{
		char two[512];
		size_t n = snprintf(
			two, sizeof(two),
			"POST / HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd%s",
			REQ_GET);

		OK(fx_buf(0, 1, two, n));
		OK(respond(0, 200));
		OK(respond(0, 202));
		REQUIRE(ASSERT_EQ(fx_drain(), 3));
		REQUIRE(ASSERT_EQ(EV(1)->method, MM_M_POST));
		REQUIRE(ASSERT_EQ(EV(2)->method, MM_M_GET));
		REQUIRE(ASSERT_EQ(EV(2)->status, 202));
		REQUIRE(ASSERT_EQ(EV(1)->req_bytes + EV(2)->req_bytes, n));
	}
}

/*
 * "Content-" headers other than Content-Length are skipped a word at a time
 * (the byte path took a step per name byte); a name that only starts like
 * it ("Content-Lengthy") is not framing, and "Content-Length:3" without the
 * space still is. Three pipelined responses in one write, then byte by byte.
 */
TEST(bpf_parse_content_star_headers)
{
	static const char resps[] =
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
		"Content-Lengthy: 7\r\nContent-Length: 5\r\n\r\nhello"
		"HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\n"
		"content-length:3\r\n\r\nabc"
		"HTTP/1.1 404 Not Found\r\nCONTENT-TYPE: x\r\n"
		"Content-Language: en\r\nContent-Length: 0\r\n\r\n";
	static const char reqs[] = REQ_GET REQ_GET
		"POST /a HTTP/1.1\r\nHost: x.test\r\nContent-Type: a/b\r\n"
		"Content-Length: 2\r\n\r\nok";
	size_t rl = sizeof(reqs) - 1, sl = sizeof(resps) - 1;

	for (size_t chunk = sl; chunk; chunk = chunk == 1 ? 0 : 1) {
		REQUIRE(ASSERT_EQ(exchange(reqs, rl, chunk < rl ? chunk : rl,
					   resps, sl, chunk),
				  3));
		REQUIRE(ASSERT_EQ(EV(0)->status, 200));
		REQUIRE(ASSERT_EQ(EV(1)->status, 201));
		REQUIRE(ASSERT_EQ(EV(2)->status, 404));
		REQUIRE(ASSERT_EQ(EV(2)->method, MM_M_POST));
		REQUIRE(ASSERT_EQ(EV(2)->req_bytes, rl - 2 * strlen(REQ_GET)));
		REQUIRE(ASSERT_EQ(EV(0)->resp_bytes + EV(1)->resp_bytes +
					  EV(2)->resp_bytes,
				  sl));
		REQUIRE(ASSERT_EQ(
			EV(1)->resp_bytes,
			strlen("HTTP/1.1 201 Created\r\nContent-Encoding: gzip\r\n"
			       "content-length:3\r\n\r\nabc")));
	}
}

/*
 * The chunked framing's word paths (a whole "Transfer-Encoding: chunked"
 * line, a size line, a chunk's data, its CRLF) against what they must
 * leave to the byte path: leading zeros, upper-case hex, a bare LF, a
 * seven-digit size. Three pipelined responses, in every split.
 */
TEST(bpf_parse_chunked_word_paths)
{
	static const char r1[] =
		"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n"
		"00A\r\n0123456789\r\n000003\r\nabc\r\n1\nx\r\n0\r\n\r\n";
	static const char r2[] =
		"HTTP/1.1 201 Created\r\nTRANSFER-ENCODING: CHUNKED\r\n\r\n"
		"0000001\r\ny\r\n0\r\n\r\n";
	static const char r3[] =
		"HTTP/1.1 202 Accepted\r\nContent-Length: 2\r\n\r\nok";
	static const char reqs[] = REQ_GET REQ_GET REQ_GET;
	char resps[sizeof(r1) + sizeof(r2) + sizeof(r3)];
	size_t sl;

	sl = snprintf(resps, sizeof(resps), "%s%s%s", r1, r2, r3);
	for (size_t ch = 1; ch <= sl; ch += ch < 9 ? 1 : 17) {
		REQUIRE(ASSERT_EQ(
			exchange(S(reqs), sizeof(reqs) - 1, resps, sl, ch), 3));
		REQUIRE(ASSERT_EQ(EV(0)->status, 200));
		REQUIRE(ASSERT_EQ(EV(1)->status, 201));
		REQUIRE(ASSERT_EQ(EV(2)->status, 202));
		REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(r1) - 1));
		REQUIRE(ASSERT_EQ(EV(1)->resp_bytes, sizeof(r2) - 1));
		REQUIRE(ASSERT_EQ(EV(2)->resp_bytes, sizeof(r3) - 1));
		REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 0));
	}
}

/* Interim 1xx responses are not the exchange's status. */
TEST(bpf_parse_interim_1xx)
{
	static const char resp[] =
		"HTTP/1.1 100 Continue\r\n\r\n"
		"HTTP/1.1 103 Early Hints\r\nLink: </s.css>\r\n\r\n"
		"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

	for (size_t ch = 1; ch <= sizeof(resp); ch += 9) {
		REQUIRE(ASSERT_EQ(exchange(S(REQ_GET), 100, S(resp), ch), 1));
		REQUIRE(ASSERT_EQ(EV(0)->status, 200));
		REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(resp) - 1));
	}
}

/* 101: the exchange ends at the head; what follows is not HTTP/1. */
TEST(bpf_parse_upgrade_101)
{
	static const char req[] =
		"GET /ws HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\n"
		"Connection: Upgrade\r\n\r\n";
	static const char resp[] =
		"HTTP/1.1 101 Switching Protocols\r\n"
		"Upgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
	static const char frame[] =
		"\x81\x05hello\x88\x00 GET / HTTP/1.1\r\n\r\n";
	struct mm_conn c;

	REQUIRE(ASSERT_EQ(exchange(S(req), 1000, S(resp), 1000), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 101));
	REQUIRE(ASSERT_EQ(EV(0)->flags, 0));
	OK(fx_buf(0, 1, S(frame)));
	OK(fx_buf(0, 0, S(frame)));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	OK(fx_conn(0, &c));
	REQUIRE(ASSERT_EQ(c.req.state, PS_OPAQUE));
	REQUIRE(ASSERT_EQ(c.resp.state, PS_OPAQUE));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 0));
}

/* Responses without a body whatever their headers say (RFC 9112 6.3). */
TEST(bpf_parse_head_204_304)
{
	static const char head_req[] = "HEAD /h HTTP/1.1\r\nHost: a\r\n\r\n";
	static const char head_resp[] =
		"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\n\r\n";
	static const char r204[] = "HTTP/1.1 204 No Content\r\n\r\n";
	static const char r304[] =
		"HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n"
		"Transfer-Encoding: chunked\r\n\r\n";

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(head_req)));
	OK(fx_buf(0, 0, S(head_resp)));
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(fx_buf(0, 0, S(r204)));
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(fx_buf(0, 0, S(r304)));
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(fx_buf(0, 0, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 4));
	REQUIRE(ASSERT_EQ(EV(0)->method, MM_M_HEAD));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(head_resp) - 1));
	REQUIRE(ASSERT_EQ(EV(1)->status, 204));
	REQUIRE(ASSERT_EQ(EV(2)->status, 304));
	REQUIRE(ASSERT_EQ(EV(2)->resp_bytes, sizeof(r304) - 1));
	REQUIRE(ASSERT_EQ(EV(3)->status, 200));
	for (int i = 0; i < 4; i++)
		REQUIRE(ASSERT_EQ(EV(i)->flags, 0));
}

/* Upstream leg: a body delimited by the backend's close (EOF on read). */
TEST(bpf_parse_close_delimited_upstream)
{
	static const char resp1[] =
		"HTTP/1.0 200 OK\r\nServer: old\r\n\r\nsome ";
	static const char resp2[] = "body bytes";

	OK(fx_reset());
	OK(fx_open(1, MM_ROLE_UP));
	OK(fx_buf(1, 0, S(REQ_GET))); /* the proxy writes the request */
	OK(fx_buf(1, 1, S(resp1)));
	OK(fx_buf(1, 1, S(resp2)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_eof(1));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->leg, MM_LEG_UPSTREAM));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->flags, MM_EV_CLOSE_DELIM));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes,
			  sizeof(resp1) + sizeof(resp2) - 2));
	REQUIRE(ASSERT_EQ(EV(0)->req_bytes, sizeof(REQ_GET) - 1));
	OK(fx_close(1));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
}

/*
 * Upstream leg, the response read before the send tracepoint of the write
 * it answers ran (Go's transport writes on one thread and reads on
 * another): held, then reported with that write's request, which the
 * socket's write_seq names (its bytes were in the socket already).
 */
TEST(bpf_parse_response_before_request)
{
	static const char r404[] =
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
	static const char head1[] = "GET /a HTTP/1.1\r\nHo";
	static const char head2[] = "st: x.test\r\n\r\n";
	struct mm_conn c;

	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(1000 + sizeof(REQ_GET) - 1); /* the request is written */
	OK(fx_buf(UP, 1, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_WAIT));
	OK(fx_buf(UP, 0, S(REQ_GET))); /* ... and its tracepoint runs */
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->leg, MM_LEG_UPSTREAM));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->flags, 0));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(RESP_200) - 1));
	REQUIRE(ASSERT_EQ(EV(0)->req_bytes, sizeof(REQ_GET) - 1));
	REQUIRE(ASSERT_LE(EV(0)->start_ns, EV(0)->end_ns));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_FIRST), 1));
	/* the next exchange, in order, pairs as ever */
	fx_write_seq(1000 + 2 * (sizeof(REQ_GET) - 1));
	OK(fx_buf(UP, 0, S(REQ_GET)));
	OK(fx_buf(UP, 1, S(r404)));
	REQUIRE(ASSERT_EQ(fx_drain(), 2));
	REQUIRE(ASSERT_EQ(EV(1)->status, 404));
	REQUIRE(ASSERT_EQ(EV(1)->resp_bytes, sizeof(r404) - 1));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_NO));
	REQUIRE(ASSERT_EQ(c.count, 0));

	/* a head in two writes, both in the socket before the response */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(sizeof(head1) + sizeof(head2) - 2);
	OK(fx_buf(UP, 1, S(r404)));
	OK(fx_buf(UP, 0, S(head1)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_buf(UP, 0, S(head2)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 404));
	REQUIRE(ASSERT_EQ(EV(0)->req_bytes, sizeof(head1) + sizeof(head2) - 2));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_FIRST), 1));

	/*
	 * Closed with half the head seen: that request is reported aborted,
	 * with no response, not with the held response's status and bytes.
	 */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(sizeof(head1) + sizeof(head2) - 2);
	OK(fx_buf(UP, 1, S(r404)));
	OK(fx_buf(UP, 0, S(head1)));
	OK(fx_close(UP));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 0));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, 0));
	REQUIRE(ASSERT_EQ(EV(0)->flags & MM_EV_ABORTED, MM_EV_ABORTED));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_FIRST), 0));
}

/*
 * The response read while the request it answers is still being parsed on
 * another CPU (its send tracepoint running, the head begun): handed to that
 * parse, which pairs it as it ends, with the request's method and route,
 * not with a half-parsed request. The parse ending with the head still cut
 * pairs it as it is (an early answer); no parse running, it pairs at once.
 * (One CPU here: "running" is the writer's flag set between two writes.)
 */
TEST(bpf_parse_response_during_request_parse)
{
	static const char head1[] = "GET /a HTTP/1.1\r\nHo";
	static const char head2[] = "st: x.test\r\n\r\n";
	static const char r431[] =
		"HTTP/1.1 431 Too Large\r\nContent-Length: 0\r\n\r\n";
	struct mm_conn c;

	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	OK(fx_buf(UP, 0, S(head1)));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.count, 1));
	REQUIRE(ASSERT_EQ(c.req_busy,
			  0)); /* cleared as the write's parse ends */
	c.req_busy = 1;        /* ... still running */
	OK(fx_conn_set(UP, &c));
	OK(fx_buf(UP, 1, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.busy_held, 1));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_NO));
	OK(fx_buf(UP, 0, S(head2))); /* the parse goes on and ends */
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->method, MM_M_GET));
	REQUIRE(ASSERT_EQ(EV(0)->flags, 0));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(RESP_200) - 1));
	REQUIRE(ASSERT_EQ(EV(0)->req_bytes, sizeof(head1) + sizeof(head2) - 2));
	REQUIRE(ASSERT_LE(EV(0)->start_ns, EV(0)->end_ns));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_IN_PARSE), 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_FIRST), 0));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.busy_held, 0));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_NO));
	REQUIRE(ASSERT_EQ(c.count, 0));
	REQUIRE(ASSERT_EQ(c.status, 0));
	/* the next exchange pairs as ever */
	OK(fx_buf(UP, 0, S(REQ_GET)));
	OK(fx_buf(UP, 1, S(r431)));
	REQUIRE(ASSERT_EQ(fx_drain(), 2));
	REQUIRE(ASSERT_EQ(EV(1)->status, 431));

	/*
	 * Closed before the parse took it: the close pairs it with the
	 * request (not aborted); the parse finds it gone.
	 */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	OK(fx_buf(UP, 0, S(head1)));
	OK(fx_conn(UP, &c));
	c.req_busy = 1;
	OK(fx_conn_set(UP, &c));
	OK(fx_buf(UP, 1, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_close(UP));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->flags & MM_EV_ABORTED, 0));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(RESP_200) - 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_IN_PARSE), 1));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.busy_held, 0));
	OK(fx_buf(UP, 0, S(head2)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));

	/* the parse ends with the head still cut: paired as it is */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	OK(fx_buf(UP, 0, S(head1)));
	OK(fx_conn(UP, &c));
	c.req_busy = 1;
	OK(fx_conn_set(UP, &c));
	OK(fx_buf(UP, 1, S(r431)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_buf(UP, 0, S("st: x.test\r\n")));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 431)); /* method: the head's end's */
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.count, 0));
	REQUIRE(ASSERT_EQ(c.busy_held, 0));

	/* no parse running: the early answer to a cut head pairs at once */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	OK(fx_buf(UP, 0, S(head1)));
	OK(fx_buf(UP, 1, S(r431)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 431));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_FIRST), 0));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.busy_held, 0));
}

/*
 * A response that answered no write to come (the request went before the
 * agent looked, or the backend spoke on its own) is dropped, never paired
 * with the next request: a write made after it has a write_seq past it,
 * and a read first ends it too.
 */
TEST(bpf_parse_response_answering_nothing)
{
	static const char r408[] =
		"HTTP/1.1 408 Request Timeout\r\nContent-Length: 0\r\n\r\n";
	struct mm_conn c;

	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(500);
	OK(fx_buf(UP, 1, S(r408)));
	fx_write_seq(500 + sizeof(REQ_GET) - 1); /* written after the read */
	OK(fx_buf(UP, 0, S(REQ_GET)));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_NO));
	REQUIRE(ASSERT_EQ(c.status, 0));
	OK(fx_buf(UP, 1, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(RESP_200) - 1));

	/* write_seq wraps: still "after" */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(0xfffffff0u);
	OK(fx_buf(UP, 1, S(r408)));
	fx_write_seq(0xfffffff0u + (uint32_t)sizeof(REQ_GET) - 1);
	OK(fx_buf(UP, 0, S(REQ_GET)));
	OK(fx_buf(UP, 1, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));

	/* two responses read in a row: the first answered nothing */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(sizeof(REQ_GET) - 1);
	OK(fx_buf(UP, 1, S(r408)));
	OK(fx_buf(UP, 1, S(RESP_200)));
	OK(fx_buf(UP, 0, S(REQ_GET)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(RESP_200) - 1));

	/* a head whose rest was written after the read is not the one */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	fx_write_seq(16);
	OK(fx_buf(UP, 1, S(r408)));
	OK(fx_buf(UP, 0, "GET /a HTTP/1.1\r\n", 16)); /* in the socket then */
	fx_write_seq(16 + sizeof(REQ_GET) - 1 - 16);
	OK(fx_buf(UP, 0, REQ_GET + 16, sizeof(REQ_GET) - 1 - 16));
	OK(fx_buf(UP, 1, S(RESP_200)));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));

	/* no socket to ask: dropped */
	OK(fx_reset());
	OK(fx_open(UP, MM_ROLE_UP));
	OK(fx_buf(UP, 1, S(RESP_200)));
	OK(fx_buf(UP, 0, S(REQ_GET)));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	OK(fx_conn(UP, &c));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_NO));
	REQUIRE(ASSERT_EQ(c.count, 1));

	/* a downstream response with nothing pending is never held */
	OK(fx_reset());
	OK(fx_open(DOWN, MM_ROLE_UNKNOWN));
	OK(fx_buf(DOWN, 1, S(REQ_GET)));
	OK(fx_buf(DOWN, 0, S(RESP_200)));
	fx_write_seq(sizeof(RESP_200) - 1);
	OK(fx_buf(DOWN, 0, S(r408)));
	OK(fx_conn(DOWN, &c));
	REQUIRE(ASSERT_EQ(c.resp_held, MM_HELD_NO));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_RESP_FIRST), 0));
}

/* Downstream leg: the proxy closes after a body without length. */
TEST(bpf_parse_close_delimited_downstream)
{
	static const char resp[] =
		"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nuntil close";

	REQUIRE(ASSERT_EQ(exchange(S(REQ_GET), 100, S(resp), 100), 0));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->flags, MM_EV_CLOSE_DELIM));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, sizeof(resp) - 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_ABORTED), 0));
}

TEST(bpf_parse_garbage_request)
{
	static const char tls[] =
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03";
	static const char not_tls[] = "\x16\x05\x01\x02\x00";
	static const char lower[] = "get / HTTP/1.1\r\n\r\n";
	struct mm_conn c;

	/* a TLS ClientHello: an HTTPS socket, not a parse failure */
	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(tls)));
	OK(fx_buf(0, 1, S(REQ_GET))); /* too late: the stream is not HTTP */
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 0));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 0));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_TLS_STREAMS), 1));
	OK(fx_conn(0, &c));
	REQUIRE(ASSERT_EQ(c.req.state, PS_OPAQUE));
	REQUIRE(ASSERT_EQ(c.resp.state, PS_OPAQUE));

	/* the same content type with no TLS version after it is garbage */
	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(not_tls)));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_TLS_STREAMS), 0));

	/* garbage after a good exchange: the good one stays */
	REQUIRE(ASSERT_EQ(exchange(S(REQ_GET), 100, S(RESP_200), 100), 1));
	OK(fx_buf(0, 1, S(lower)));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 1));
}

/* A response that is not HTTP: the request is reported, aborted. */
TEST(bpf_parse_garbage_response)
{
	REQUIRE(ASSERT_EQ(exchange(S(REQ_GET), 100,
				   S("SSH-2.0-OpenSSH_9.2\r\n"), 100),
			  0));
	OK(fx_close(0));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_TRUE(EV(0)->flags & MM_EV_ABORTED));
	REQUIRE(ASSERT_EQ(EV(0)->status, 0));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 1));
}

/* A response head written as one iovec per token and CRLF (24 of them). */
TEST(bpf_parse_writev_24_iovecs)
{
	static const char *tok[] = {
		"HTTP/1.1",
		" ",
		"200",
		" ",
		"OK",
		"\r\n",
		"Server",
		": ",
		"gw",
		"\r\n",
		"Content-Type",
		": ",
		"text/plain",
		"\r\n",
		"Content-Length",
		": ",
		"5",
		"\r\n",
		"Date",
		": ",
		"Sun, 22 Nov 2026 20:00:00 GMT",
		"\r\n",
		"\r\n",
		"hello",
	};
	struct iovec iov[24];
	size_t total = 0;
	struct iovec rq[3] = {
		{ (void *)"GET /a HTTP/1.1\r\n", 17 },
		{ (void *)"Host: x.test\r\n", 14 },
		{ (void *)"\r\n", 2 },
	};

	_Static_assert(sizeof(tok) / sizeof(tok[0]) == 24, "24 iovecs");
	for (int i = 0; i < 24; i++) {
		iov[i].iov_base = (void *)tok[i];
		iov[i].iov_len = strlen(tok[i]);
		total += iov[i].iov_len;
	}
	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_iov(0, 1, rq, 3, 33));      /* readv */
	OK(fx_iov(0, 0, iov, 24, total)); /* writev */
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->req_bytes, 33));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, total));
	/* the same through sendmsg/recvmsg */
	OK(fx_msg(0, 1, rq, 3, 33));
	OK(fx_msg(0, 0, iov, 24, total));
	REQUIRE(ASSERT_EQ(fx_drain(), 2));
	REQUIRE(ASSERT_EQ(EV(1)->status, 200));
	REQUIRE(ASSERT_EQ(EV(1)->resp_bytes, total));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_IOV_LIMIT), 0));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_NO_BUFFER), 0));
}

/* IOV_MAX iovecs: the last byte of the body is in the 1024th. */
TEST(bpf_parse_writev_1024_iovecs)
{
	static char resp[4096];
	static struct iovec iov[1024];
	size_t n, i, per;

	n = snprintf(resp, sizeof(resp),
		     "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n");
	memset(resp + n, 'q', 2000);
	n += 2000;
	/* 1023 iovecs of 2 bytes, the rest in the last one */
	per = 2;
	for (i = 0; i < 1023; i++) {
		iov[i].iov_base = resp + i * per;
		iov[i].iov_len = per;
	}
	iov[1023].iov_base = resp + 1023 * per;
	iov[1023].iov_len = n - 1023 * per;
	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(fx_iov(0, 0, iov, 1024, n));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 200));
	REQUIRE(ASSERT_EQ(EV(0)->resp_bytes, n));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_IOV_LIMIT), 0));
	/* a head in 1-byte iovecs, 1024 of them (head + part of the body) */
	n = snprintf(
		resp, sizeof(resp),
		"HTTP/1.1 202 OK\r\nX-Pad: %0900d\r\nContent-Length: 200\r\n\r\n",
		0);
	memset(resp + n, 'q', 200);
	REQUIRE(ASSERT_TRUE(n < 1024));
	for (i = 0; i < 1024; i++) {
		iov[i].iov_base = resp + i;
		iov[i].iov_len = 1;
	}
	OK(fx_buf(0, 1, S(REQ_GET)));
	OK(fx_iov(0, 0, iov, 1024, 1024));
	OK(fx_buf(0, 0, resp + 1024, n + 200 - 1024));
	REQUIRE(ASSERT_EQ(fx_drain(), 2));
	REQUIRE(ASSERT_EQ(EV(1)->status, 202));
	REQUIRE(ASSERT_EQ(EV(1)->resp_bytes, n + 200));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_IOV_LIMIT), 0));
	REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_SCAN_LIMIT), 0));
}

/* A request head past MM_HEAD_MAX: parsed whole, flagged truncated. */
TEST(bpf_parse_oversize_head)
{
	static char req[4096];
	size_t n;

	n = snprintf(
		req, sizeof(req),
		"GET /big HTTP/1.1\r\nHost: a\r\nCookie: %03000d\r\nX-After: 1\r\n\r\n",
		7);
	for (size_t ch = 1; ch <= n; ch = ch * 3 + 1) {
		REQUIRE(ASSERT_EQ(exchange(req, n, ch, S(RESP_200), 1000), 1));
		REQUIRE(ASSERT_EQ(EV(0)->flags, MM_EV_HEAD_TRUNC));
		REQUIRE(ASSERT_EQ(EV(0)->req_bytes, n));
		REQUIRE(ASSERT_EQ(EV(0)->status, 200));
		REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_HEAD_TRUNC), 1));
	}
	/* exactly MM_HEAD_MAX bytes is not truncated */
	n = snprintf(req, sizeof(req), "GET / HTTP/1.1\r\nX: ");
	memset(req + n, 'v', MM_HEAD_MAX - n - 4);
	memcpy(req + MM_HEAD_MAX - 4, "\r\n\r\n", 4);
	REQUIRE(ASSERT_EQ(
		exchange(req, MM_HEAD_MAX, MM_HEAD_MAX, S(RESP_200), 1000), 1));
	REQUIRE(ASSERT_EQ(EV(0)->flags, 0));
}

/*
 * The head copy user space gets is put together from the windows the head
 * was parsed in. This table (none: MM_CFG_DEFERS off) defers only requests
 * that say so themselves, here an absolute-form target: its head, read 5
 * bytes at a time, arrives whole, and cut at MM_HEAD_MAX when longer. A
 * plain head whose reads are cut after its Host keeps nothing and gets no
 * mm_conn_exts entry (cut before, it must keep: a long host defers).
 */
TEST(bpf_parse_head_copy_across_reads)
{
	static const char line_host[] =
		"GET /a HTTP/1.1\r\nHost: x.test\r\nAcc";
	static const char rest[] =
		"ept: */*\r\nX-Long: 0123456789abcdef\r\n\r\n";
	static char req[2048];
	struct mm_conn c;
	size_t n;

	OK(fx_reset());
	OK(fx_open(0, MM_ROLE_UNKNOWN));
	OK(fx_buf(0, 1, S(line_host)));
	OK(fx_chunks(0, 1, S(rest), 5));
	OK(fx_buf(0, 0, S(RESP_200)));
	OK(fx_conn(0, &c));
	REQUIRE(ASSERT_EQ(c.has_ext, 0));
	REQUIRE(ASSERT_EQ(fx_drain(), 1));
	REQUIRE(ASSERT_EQ(EV(0)->route_id, MM_ROUTE_UNMATCHED));

	for (int big = 0; big < 2; big++) {
		n = snprintf(
			req, sizeof(req),
			"GET http://x.test/abs HTTP/1.1\r\nHost: x.test\r\n"
			"Cookie: %0*d\r\n\r\n",
			big ? 1200 : 10, 7);
		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		OK(fx_chunks(0, 1, req, n, 5));
		OK(fx_buf(0, 0, S(RESP_200)));
		REQUIRE(ASSERT_EQ(fx_drain(), 2));
		REQUIRE(ASSERT_EQ(EV(0)->type, MM_EVT_HEAD));
		REQUIRE(ASSERT_EQ(EV(0)->head_len, big ? MM_HEAD_MAX : n));
		REQUIRE(ASSERT_TRUE(!memcmp(FX_HEAD(0), req, EV(0)->head_len)));
		REQUIRE(ASSERT_EQ(EV(0)->flags, big ? MM_EV_HEAD_TRUNC : 0));
		REQUIRE(ASSERT_EQ(EV(1)->route_id, MM_ROUTE_DEFER));
	}
}

/*
 * A status line whose code is below 100 is not HTTP (RFC 9110 15): the
 * request is reported aborted, never as a completed exchange with status
 * 0 or 11 (found by fuzz_bpf_parser).
 */
TEST(bpf_parse_status_below_100)
{
	static const char *bad[] = {
		"HTTP/1.1 000 Zero\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 011 X\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.1 099\r\n\r\n",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		REQUIRE(ASSERT_EQ(exchange(S(REQ_GET), 100, bad[i],
					   strlen(bad[i]), 100),
				  0));
		OK(fx_close(0));
		REQUIRE(ASSERT_EQ(fx_drain(), 1));
		REQUIRE(ASSERT_EQ(EV(0)->status, 0));
		REQUIRE(ASSERT_TRUE(EV(0)->flags & MM_EV_ABORTED));
		REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 1));
	}
	/* 100 itself is interim, 999 a (strange) final status */
	REQUIRE(ASSERT_EQ(
		exchange(
			S(REQ_GET), 100,
			S("HTTP/1.1 100 C\r\n\r\nHTTP/1.1 999 X\r\nContent-Length: 0\r\n\r\n"),
			100),
		1));
	REQUIRE(ASSERT_EQ(EV(0)->status, 999));
}

/*
 * Garbage inside a chunked request body ends the request stream, but that
 * request's head was complete: the proxy answers it, and it is reported,
 * tracked or past the pipeline depth (found by fuzz_bpf_parser: the
 * untracked one was dropped without a trace).
 */
TEST(bpf_parse_garbage_in_chunked_body)
{
	static const char post[] =
		"POST /c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n";
	char buf[4096];
	size_t n;

	for (int depth = 1; depth <= MM_PIPELINE_DEPTH + 1;
	     depth += MM_PIPELINE_DEPTH) {
		OK(fx_reset());
		OK(fx_open(0, MM_ROLE_UNKNOWN));
		n = pipeline(buf, sizeof(buf), 0, depth - 1);
		memcpy(buf + n, post, sizeof(post) - 1);
		OK(fx_buf(0, 1, buf, n + sizeof(post) - 1));
		REQUIRE(ASSERT_EQ(fx_stat(MM_STAT_UNPARSED), 1));
		for (int i = 0; i < depth; i++)
			OK(respond(0, 400 + i));
		REQUIRE(ASSERT_EQ(fx_drain(), depth));
		REQUIRE(ASSERT_EQ(EV(depth - 1)->status, 400 + depth - 1));
		REQUIRE(ASSERT_EQ(EV(depth - 1)->flags,
				  depth > MM_PIPELINE_DEPTH ? MM_EV_UNTRACKED
							    : 0));
		OK(fx_close(0));
		REQUIRE(ASSERT_EQ(fx_drain(), depth));
	}
}
