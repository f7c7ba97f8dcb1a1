// SPDX-License-Identifier: Apache-2.0
/*
 * HTTP/2 streams -> exchanges. A stream is followed only when its request
 * HEADERS is seen: a stream whose first frame we see is a response or DATA
 * was opened before the agent attached and is counted, not reported, since
 * its request fields and start time are gone.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "agent/h2/conn.h"
#include "agent/h2/frame.h"
#include "agent/h2/hpack.h"
#include "bpf/milometer.h"

#define FIELD_MAX 4096 /* longer values are cut (paths beyond this are rare) */

struct h2_stream {
	uint32_t id;
	bool req_done;   /* END_STREAM from the client */
	bool final_seen; /* non-1xx response HEADERS */
	uint16_t status;
	uint32_t unknown;
	int32_t grpc;
	int64_t clen;
	uint64_t start_ns, req_bytes, resp_bytes;
	char *method, *path, *authority, *host, *scheme;
	char *hdrs; /* other request fields, "name: value\r\n"... */
	size_t hdrs_len;
	bool hdrs_trunc; /* past H2_HDRS_MAX */
};

struct h2_conn {
	struct h2_conn_opts o;
	struct h2_framer fr[2];
	struct h2_hpack *hp[2];
	/* the header block being gathered per direction (HEADERS+CONTINUATION) */
	struct {
		uint8_t *buf;
		size_t len, cap;
		uint32_t stream;
		bool active, end_stream, lost;
		uint64_t first_ns;
		uint64_t bytes; /* frame bytes of the block, for a new stream */
	} blk[2];
	struct h2_stream **st;
	size_t nst, capst;
	uint32_t max_client_id; /* highest client stream id opened */
	struct h2_conn_stats stats;
	/* the block being decoded, for the field callback */
	struct h2_stream *cur;
	enum h2_dir cur_dir;
	bool cur_trailers;
	uint32_t cur_unknown;
	bool cur_has[4];
};

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static void stream_free(struct h2_stream *s)
{
	free(s->method);
	free(s->path);
	free(s->authority);
	free(s->host);
	free(s->scheme);
	free(s->hdrs);
	free(s);
}

static struct h2_stream *find(struct h2_conn *c, uint32_t id, size_t *pos)
{
	for (size_t i = 0; i < c->nst; i++) {
		if (c->st[i]->id == id) {
			if (pos)
				*pos = i;
			return c->st[i];
		}
	}
	return NULL;
}

static struct h2_stream *open_stream(struct h2_conn *c, uint32_t id,
				     uint64_t start_ns)
{
	struct h2_stream *s;

	if (c->nst >= H2_MAX_STREAMS) {
		c->stats.streams_over_limit++;
		return NULL;
	}
	if (c->nst == c->capst) {
		size_t cap = c->capst ? c->capst * 2 : 16;
		struct h2_stream **n = realloc(c->st, cap * sizeof(*n));

		if (!n)
			return NULL;
		c->st = n;
		c->capst = cap;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->id = id;
	s->grpc = H2_GRPC_NONE;
	s->clen = -1;
	s->start_ns = start_ns;
	c->st[c->nst++] = s;
	if (id > c->max_client_id)
		c->max_client_id = id;
	return s;
}

static uint8_t method_id(const char *m)
{
	static const char *const names[MM_M__COUNT] = {
		[MM_M_GET] = "GET",         [MM_M_HEAD] = "HEAD",
		[MM_M_POST] = "POST",       [MM_M_PUT] = "PUT",
		[MM_M_DELETE] = "DELETE",   [MM_M_CONNECT] = "CONNECT",
		[MM_M_OPTIONS] = "OPTIONS", [MM_M_TRACE] = "TRACE",
		[MM_M_PATCH] = "PATCH",
	};

	for (int i = 1; i < MM_M__COUNT; i++)
		if (m && !strcmp(m, names[i]))
			return i;
	return MM_M_OTHER;
}

/* Hand the stream to the callback and forget it. */
static void finish(struct h2_conn *c, struct h2_stream *s, uint64_t end_ns,
		   uint8_t flags, uint32_t code)
{
	struct h2_exchange ex = {
		.stream_id = s->id,
		.method = method_id(s->method),
		.flags = flags,
		.status = s->final_seen ? s->status : 0,
		.unknown = s->unknown,
		.rst_code = code,
		.grpc_status = s->grpc,
		.content_length = s->clen,
		.start_ns = s->start_ns,
		.end_ns = end_ns,
		.req_bytes = s->req_bytes,
		.resp_bytes = s->resp_bytes,
		.method_str = s->method ? s->method : "",
		.path = s->path ? s->path : "",
		.authority = s->authority ? s->authority
			     : s->host    ? s->host
					  : "",
		.scheme = s->scheme ? s->scheme : "",
		.headers = s->hdrs ? s->hdrs : "",
		.headers_trunc = s->hdrs_trunc || (s->unknown & H2_UNK_OTHER),
	};
	size_t pos;

	if (!s->final_seen)
		ex.flags |= MM_EV_NO_RESPONSE;
	if (flags & MM_EV_ABORTED)
		c->stats.aborted++;
	c->stats.exchanges++;
	if (c->o.on_exchange)
		c->o.on_exchange(c->o.ctx, &ex);
	if (find(c, s->id, &pos))
		c->st[pos] = c->st[--c->nst];
	stream_free(s);
}

static char *dup_field(const char *v, size_t n)
{
	char *d;

	if (n > FIELD_MAX)
		n = FIELD_MAX;
	d = malloc(n + 1);
	if (d) {
		memcpy(d, v, n);
		d[n] = 0;
	}
	return d;
}

static bool is(const char *name, size_t nlen, const char *lit)
{
	return nlen == strlen(lit) && !memcmp(name, lit, nlen);
}

static int64_t parse_num(const char *v, size_t n, int64_t max)
{
	int64_t x = 0;

	if (!n)
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9' || x > max / 10)
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x <= max ? x : -1;
}

static void set_str(char **dst, const char *v, size_t n)
{
	free(*dst);
	*dst = dup_field(v, n);
}

/* A regular request field, kept for header matches of routes. */
static void add_header(struct h2_stream *s, const char *name, size_t nlen,
		       const char *v, size_t vlen)
{
	size_t need = nlen + vlen + 4;

	if (s->hdrs_trunc)
		return;
	if (!s->hdrs) {
		s->hdrs = malloc(H2_HDRS_MAX + 1);
		if (!s->hdrs) {
			s->hdrs_trunc = true;
			return;
		}
		s->hdrs[0] = 0;
	}
	if (s->hdrs_len + need > H2_HDRS_MAX) {
		s->hdrs_trunc = true;
		return;
	}
	memcpy(s->hdrs + s->hdrs_len, name, nlen);
	s->hdrs_len += nlen;
	memcpy(s->hdrs + s->hdrs_len, ": ", 2);
	s->hdrs_len += 2;
	memcpy(s->hdrs + s->hdrs_len, v, vlen);
	s->hdrs_len += vlen;
	memcpy(s->hdrs + s->hdrs_len, "\r\n", 2);
	s->hdrs_len += 2;
	s->hdrs[s->hdrs_len] = 0;
}

static void on_field(void *ctx, const char *name, size_t nlen, const char *v,
		     size_t vlen)
{
	struct h2_conn *c = ctx;
	struct h2_stream *s = c->cur;

	if (!name) {
		c->cur_unknown++;
		c->stats.unknown_fields++;
		return;
	}
	if (!s)
		return;
	if (c->cur_dir == H2_FROM_CLIENT) {
		if (c->cur_trailers)
			return;
		if (is(name, nlen, ":method")) {
			set_str(&s->method, v, vlen);
			c->cur_has[0] = true;
		} else if (is(name, nlen, ":path")) {
			set_str(&s->path, v, vlen);
			c->cur_has[1] = true;
		} else if (is(name, nlen, ":authority")) {
			set_str(&s->authority, v, vlen);
			c->cur_has[2] = true;
		} else if (is(name, nlen, "host")) {
			set_str(&s->host, v, vlen);
		} else if (is(name, nlen, ":scheme")) {
			set_str(&s->scheme, v, vlen);
		} else if (nlen && name[0] != ':' && !memchr(v, '\r', vlen) &&
			   !memchr(v, '\n', vlen)) {
			add_header(s, name, nlen, v, vlen);
		}
		return;
	}
	if (is(name, nlen, ":status")) {
		int64_t st = parse_num(v, vlen, 999);

		c->cur_has[0] = true;
		if (st >= 100 && st < 200)
			return; /* interim: the final status follows */
		if (st >= 200) {
			s->status = st;
			s->final_seen = true;
		}
	} else if (is(name, nlen, "grpc-status")) {
		s->grpc = parse_num(v, vlen, 16);
		c->cur_has[1] = true;
	} else if (is(name, nlen, "content-length") && !c->cur_trailers) {
		s->clen = parse_num(v, vlen, INT64_MAX);
	}
}

/* After a block: fields it should have carried but an unknown one may be. */
static void block_done(struct h2_conn *c, struct h2_stream *s, bool lost)
{
	bool unk = lost || c->cur_unknown;

	if (!s || !unk)
		return;
	if (c->cur_dir == H2_FROM_CLIENT && !c->cur_trailers) {
		if (!c->cur_has[0])
			s->unknown |= H2_UNK_METHOD;
		if (!c->cur_has[1])
			s->unknown |= H2_UNK_PATH;
		if (!c->cur_has[2] && !s->host)
			s->unknown |= H2_UNK_AUTHORITY;
		s->unknown |= H2_UNK_OTHER;
	} else if (c->cur_dir == H2_FROM_SERVER) {
		if (!c->cur_has[0] && !s->final_seen)
			s->unknown |= H2_UNK_STATUS;
		if (!c->cur_has[1])
			s->unknown |= H2_UNK_GRPC;
		s->unknown |= H2_UNK_OTHER;
	}
}

static void header_block(struct h2_conn *c, enum h2_dir d, uint64_t last_ns)
{
	typeof(c->blk[0]) *b = &c->blk[d];
	struct h2_stream *s = find(c, b->stream, NULL);
	bool new_req = false;

	b->active = false;
	if (d == H2_FROM_CLIENT && !s && (b->stream & 1) &&
	    b->stream > c->max_client_id) {
		s = open_stream(c, b->stream, b->first_ns);
		new_req = s != NULL;
	} else if (!s && (b->stream & 1)) {
		c->stats.untracked_streams += d == H2_FROM_SERVER;
	}
	c->cur = s;
	c->cur_dir = d;
	c->cur_trailers = s && !new_req &&
			  (d == H2_FROM_CLIENT || s->final_seen);
	c->cur_unknown = 0;
	memset(c->cur_has, 0, sizeof(c->cur_has));
	if (b->lost) {
		/* the table may have changed in what we lost: count afresh */
		c->stats.lost_blocks++;
		h2_hpack__reattach(c->hp[d]);
	} else if (h2_hpack__decode(c->hp[d], b->buf, b->len, on_field, c)) {
		b->lost = true; /* counted in hpack's stats */
	}
	block_done(c, s, b->lost);
	c->cur = NULL;
	if (new_req && !b->lost && !c->cur_has[0] && !c->cur_unknown) {
		/* no :method: trailers of a stream opened before the attach */
		size_t pos;

		c->stats.untracked_streams++;
		if (find(c, s->id, &pos))
			c->st[pos] = c->st[--c->nst];
		stream_free(s);
		return;
	}
	if (!s)
		return;
	if (new_req)
		s->req_bytes = b->bytes;
	if (d == H2_FROM_CLIENT) {
		if (b->end_stream)
			s->req_done = true;
	} else if (b->end_stream) {
		finish(c, s, last_ns, 0, 0);
	}
}

/* Begin gathering a header block from its first fragment. */
static void block_set(struct h2_conn *c, enum h2_dir d, uint32_t stream,
		      bool end_stream, const struct h2_frame *f,
		      const uint8_t *frag, int64_t len)
{
	typeof(c->blk[0]) *b = &c->blk[d];

	b->active = true;
	b->stream = stream;
	b->end_stream = end_stream;
	b->first_ns = f->first_ns;
	b->bytes = 9 + (uint64_t)f->len;
	b->len = 0;
	b->lost = !frag || len < 0;
	if (b->lost)
		return;
	if ((size_t)len > b->cap) {
		uint8_t *nb = realloc(b->buf, len);

		if (!nb) {
			b->lost = true;
			return;
		}
		b->buf = nb;
		b->cap = len;
	}
	if (len)
		memcpy(b->buf, frag, len);
	b->len = len;
}

/* HEADERS: [pad length] [priority: 5 bytes] fragment [padding] */
static void headers_frame(struct h2_conn *c, enum h2_dir d,
			  const struct h2_frame *f)
{
	const uint8_t *p = f->payload;
	int64_t len = f->len;
	uint32_t pad = 0;

	if (p && (f->flags & H2_F_PADDED)) {
		pad = len >= 1 ? p[0] : 0;
		p++;
		len--;
	}
	if (p && (f->flags & H2_F_PRIORITY)) {
		p += 5;
		len -= 5;
	}
	len -= pad;
	block_set(c, d, f->stream_id, f->flags & H2_F_END_STREAM, f, p, len);
}

/* PUSH_PROMISE: [pad length] promised id (4) fragment [padding] */
static void push_promise_frame(struct h2_conn *c, enum h2_dir d,
			       const struct h2_frame *f)
{
	const uint8_t *p = f->payload;
	int64_t len = f->len;
	uint32_t pad = 0, promised = 0;

	if (p && (f->flags & H2_F_PADDED)) {
		pad = len >= 1 ? p[0] : 0;
		p++;
		len--;
	}
	if (p && len >= 4) {
		promised = be32(p) & 0x7fffffff;
		p += 4;
	}
	len -= 4 + pad;
	block_set(c, d, promised, false, f, p, len);
}

static void block_more(struct h2_conn *c, enum h2_dir d,
		       const struct h2_frame *f)
{
	typeof(c->blk[0]) *b = &c->blk[d];

	b->bytes += 9 + (uint64_t)f->len;
	if (b->lost)
		return;
	if (!f->payload || b->len + f->len > H2_KEEP_MAX) {
		b->lost = true;
		return;
	}
	if (b->len + f->len > b->cap) {
		uint8_t *nb = realloc(b->buf, b->len + f->len);

		if (!nb) {
			b->lost = true;
			return;
		}
		b->buf = nb;
		b->cap = b->len + f->len;
	}
	if (f->len)
		memcpy(b->buf + b->len, f->payload, f->len);
	b->len += f->len;
}

static void settings(struct h2_conn *c, enum h2_dir d, const struct h2_frame *f)
{
	if (f->flags & H2_F_ACK || !f->payload)
		return;
	c->stats.settings[d]++;
	for (uint32_t i = 0; i + 6 <= f->len; i += 6) {
		uint16_t id = (uint16_t)f->payload[i] << 8 | f->payload[i + 1];

		/*
		 * Recorded only: the table changes by the size updates in the
		 * blocks themselves, which hpack.c follows (see there).
		 */
		if (id == 0x1)
			c->stats.header_table_size[d] =
				be32(f->payload + i + 2);
	}
}

static void goaway(struct h2_conn *c, enum h2_dir d, const struct h2_frame *f)
{
	uint32_t last, code;

	if (!f->payload || f->len < 8)
		return;
	last = be32(f->payload) & 0x7fffffff;
	code = be32(f->payload + 4);
	if (d != H2_FROM_SERVER)
		return; /* the client's GOAWAY concerns pushed streams only */
	/* streams above last_stream_id were not processed (RFC 9113 §6.8) */
	for (size_t i = c->nst; i-- > 0;) {
		if (i < c->nst && c->st[i]->id > last)
			finish(c, c->st[i], f->last_ns, MM_EV_ABORTED, code);
	}
}

static void on_frame(void *ctx, const struct h2_frame *f)
{
	struct h2_conn *c = ctx;
	enum h2_dir d = c->cur_dir; /* set by h2_conn__feed() */
	typeof(c->blk[0]) *b = &c->blk[d];
	struct h2_stream *s;

	c->stats.frames[d]++;
	if (b->active &&
	    (f->type != H2_CONTINUATION || f->stream_id != b->stream)) {
		/* RFC 9113 §6.10: nothing may interleave a header block */
		b->lost = true;
		header_block(c, d, f->last_ns);
	}
	s = f->stream_id ? find(c, f->stream_id, NULL) : NULL;
	if (s) {
		if (d == H2_FROM_CLIENT)
			s->req_bytes += 9 + f->len;
		else
			s->resp_bytes += 9 + f->len;
	}
	switch (f->type) {
	case H2_HEADERS:
		headers_frame(c, d, f);
		if (f->flags & H2_F_END_HEADERS)
			header_block(c, d, f->last_ns);
		break;
	case H2_PUSH_PROMISE:
		/*
		 * A pushed response is not a request the client made: counted
		 * and skipped. Its block went through the server's encoder, so
		 * it is decoded all the same to keep the table in step.
		 */
		c->stats.push_promises++;
		push_promise_frame(c, d, f);
		if (f->flags & H2_F_END_HEADERS)
			header_block(c, d, f->last_ns);
		break;
	case H2_CONTINUATION:
		if (!b->active)
			break; /* its HEADERS predates the attach */
		block_more(c, d, f);
		if (f->flags & H2_F_END_HEADERS)
			header_block(c, d, f->last_ns);
		break;
	case H2_DATA:
		if (s && (f->flags & H2_F_END_STREAM)) {
			if (d == H2_FROM_CLIENT)
				s->req_done = true;
			else
				finish(c, s, f->last_ns, 0, 0);
		}
		break;
	case H2_RST_STREAM:
		if (s)
			finish(c, s, f->last_ns, MM_EV_ABORTED,
			       f->payload && f->len >= 4 ? be32(f->payload)
							 : 0);
		break;
	case H2_SETTINGS:
		settings(c, d, f);
		break;
	case H2_GOAWAY:
		goaway(c, d, f);
		break;
	default:
		break; /* PING, WINDOW_UPDATE, PRIORITY, unknown types: skipped */
	}
}

struct h2_conn *h2_conn__new(const struct h2_conn_opts *o)
{
	struct h2_conn *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->o = *o;
	c->o.upgrade = NULL;
	h2_framer__init(&c->fr[H2_FROM_CLIENT], o->from_start || o->upgrade);
	h2_framer__init(&c->fr[H2_FROM_SERVER], false);
	c->hp[0] = h2_hpack__new(o->from_start || o->upgrade);
	c->hp[1] = h2_hpack__new(o->from_start || o->upgrade);
	if (!c->hp[0] || !c->hp[1])
		goto fail;
	if (o->upgrade) {
		const struct h2_upgrade_req *u = o->upgrade;
		struct h2_stream *s = open_stream(c, 1, u->start_ns);

		if (!s)
			goto fail;
		s->req_done = true; /* the HTTP/1.1 request was complete */
		s->req_bytes = u->req_bytes;
		s->method = dup_field(u->method, strlen(u->method));
		s->path = dup_field(u->path, strlen(u->path));
		s->authority = dup_field(u->authority, strlen(u->authority));
		s->scheme = dup_field("http", 4);
	}
	return c;
fail:
	h2_conn__free(c, 0);
	return NULL;
}

void h2_conn__free(struct h2_conn *c, uint64_t close_ns)
{
	if (!c)
		return;
	while (c->nst)
		finish(c, c->st[c->nst - 1], close_ns, MM_EV_ABORTED, 0);
	free(c->st);
	for (int d = 0; d < 2; d++) {
		h2_framer__release(&c->fr[d]);
		h2_hpack__free(c->hp[d]);
		free(c->blk[d].buf);
	}
	free(c);
}

int h2_conn__feed(struct h2_conn *c, enum h2_dir dir, const void *data,
		  size_t len, uint64_t ts_ns)
{
	c->cur_dir = dir;
	return h2_framer__feed(&c->fr[dir], data, len, ts_ns, on_frame, c);
}

void h2_conn__lost(struct h2_conn *c, enum h2_dir dir)
{
	h2_framer__resync(&c->fr[dir]);
	if (c->blk[dir].active) {
		c->blk[dir].lost = true;
		c->cur_dir = dir;
		header_block(c, dir, 0);
	} else {
		/* a whole block may have been in the gap */
		c->stats.lost_blocks++;
		h2_hpack__reattach(c->hp[dir]);
	}
}

void h2_conn__stats(const struct h2_conn *c, struct h2_conn_stats *st)
{
	struct h2_hpack_stats hs;

	*st = c->stats;
	for (int d = 0; d < 2; d++) {
		h2_hpack__stats(c->hp[d], &hs);
		st->hpack_errors += hs.errors;
	}
}
