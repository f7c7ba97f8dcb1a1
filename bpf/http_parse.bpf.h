/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * Incremental HTTP/1.x parser, mm_parse_steps steps per bpf_loop() callback. State is
 * kept per connection, so a request split into any number of reads (down to
 * one byte each) parses the same as one read. The byte loop runs only over
 * heads, chunk-size lines and trailers; bodies are skipped by arithmetic in
 * the window loop (capture.bpf.h) without copying them.
 *
 * bpf_loop rather than an unrolled loop: the verifier checks the callback
 * once instead of every iteration, so the parser can be a real state machine
 * without hitting the 1M-instruction complexity limit.
 */
#ifndef MM_HTTP_PARSE_BPF_H
#define MM_HTTP_PARSE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "bpf/compat.bpf.h"
#include "bpf/conn.bpf.h"
#include "bpf/fnv1a.h"
#include "bpf/maps.bpf.h"
#include "bpf/pipeline.bpf.h"
#include "bpf/route_acc.bpf.h"

/*
 * The word paths below do in one step what the byte path does in several,
 * and must end in the same state. The parser fuzzer's byte-by-byte run
 * turns them off (its glue defines this), so the byte path is the oracle
 * every word path is compared with; the BPF object always has them on.
 */
#ifndef MM_WORD_PATHS
#define MM_WORD_PATHS() 1
#endif

enum mm_bev {
	BEV_NONE = 0,
	BEV_HEAD_END, /* empty line after the headers */
	BEV_SKIP,     /* entered a state whose bytes are skipped, not read */
	BEV_MSG_END,  /* chunked body (with trailers) complete */
	BEV_GARBAGE,  /* bytes that are not HTTP/1.x */
	BEV_GARBAGE_BODY, /* the same in a chunked body: its head was complete */
};

static __always_inline __u8 lower(__u8 ch)
{
	return ch >= 'A' && ch <= 'Z' ? ch + 32 : ch;
}

#define TOK3(a, b, c)             (((__u64)(a) << 16) | ((__u64)(b) << 8) | (c))
#define TOK4(a, b, c, d)          ((TOK3(a, b, c) << 8) | (d))
#define TOK5(a, b, c, d, e)       ((TOK4(a, b, c, d) << 8) | (e))
#define TOK6(a, b, c, d, e, f)    ((TOK5(a, b, c, d, e) << 8) | (f))
#define TOK7(a, b, c, d, e, f, g) ((TOK6(a, b, c, d, e, f) << 8) | (g))

static __always_inline __u8 method_of(__u64 tok)
{
	switch (tok) {
	case TOK3('G', 'E', 'T'):
		return MM_M_GET;
	case TOK4('H', 'E', 'A', 'D'):
		return MM_M_HEAD;
	case TOK4('P', 'O', 'S', 'T'):
		return MM_M_POST;
	case TOK3('P', 'U', 'T'):
		return MM_M_PUT;
	case TOK6('D', 'E', 'L', 'E', 'T', 'E'):
		return MM_M_DELETE;
	case TOK7('C', 'O', 'N', 'N', 'E', 'C', 'T'):
		return MM_M_CONNECT;
	case TOK7('O', 'P', 'T', 'I', 'O', 'N', 'S'):
		return MM_M_OPTIONS;
	case TOK5('T', 'R', 'A', 'C', 'E'):
		return MM_M_TRACE;
	case TOK5('P', 'A', 'T', 'C', 'H'):
		return MM_M_PATCH;
	}
	return MM_M_OTHER;
}

/* "chunked" as the low 7 bytes of te_tail */
#define TE_CHUNKED TOK7('c', 'h', 'u', 'n', 'k', 'e', 'd')

/* What every message start resets. */
static __always_inline void msg_reset(struct mm_parser *p)
{
	p->tok = 0;
	p->tok_len = 0;
	p->chunked = 0;
	p->has_cl = 0;
	p->cl_bad = 0;
	p->cl = 0;
	p->te_tail = 0;
	p->up_h2c = 0;
}

static __always_inline void start_request(struct mm_lctx *x)
{
	struct mm_conn *c = x->c;
	struct mm_pending *s = NULL;

	route_acc_reset(&x->s->ra);
	c->head_len = 0;
	c->head_trunc = 0;
	c->head_gap = 0;
	/*
	 * Past the depth, requests wait uncounted in order; slots are used
	 * again only once those are answered, so responses stay in order.
	 */
	if (c->count < MM_PIPELINE_DEPTH && !c->untracked)
		s = pipe_push(c);
	if (s) {
		s->start_ns = x->s->now;
		s->seq = c->next_seq;
		s->route_id = MM_ROUTE_UNKNOWN;
	} else if (c->untracked < 255) {
		struct mm_overflow *o = pipe_ovf(c, c->next_seq);

		if (!c->untracked)
			c->ovf_front = c->next_seq;
		c->untracked++;
		if (o) {
			o->seq = c->next_seq;
			o->start_ns = x->s->now;
			o->valid = 0;
		}
	} else {
		/* 287 requests unanswered: past what one connection tracks */
		stat_inc(MM_STAT_PIPELINE_LOST);
	}
	c->next_seq++;
}

static __always_inline bool name_is(const struct mm_parser *p, const char *n,
				    __u8 len)
{
	if (p->name_len != len)
		return false;
#pragma unroll
	for (int k = 0; k < 17; k++)
		if (k < len && p->name[k] != n[k])
			return false;
	return true;
}

/*
 * Exact names: the word path (line_start) recognises exactly these, and a
 * split must not change which header a line is.
 */
static __always_inline void classify_header(struct mm_parser *p)
{
	p->hdr = HDR_OTHER;
	if (name_is(p, "host", 4))
		p->hdr = HDR_HOST;
	else if (name_is(p, "content-length", 14))
		p->hdr = HDR_CL;
	else if (name_is(p, "transfer-encoding", 17))
		p->hdr = HDR_TE;
	else if (name_is(p, "upgrade", 7)) {
		p->hdr = HDR_UPGRADE;
		p->te_tail = 0;
	}
}

/* a '.' at host[pos]: where the wildcard suffixes to try start */
static __always_inline void host_dot(struct mm_route_acc *a, __u8 pos)
{
	if (a->ndots < MM_DOTS_MAX) {
		*IDX(a->dots, a->ndots, MM_DOTS_MAX) = pos;
		a->ndots++;
	} else {
		a->dots_over = 1;
	}
}

static __always_inline void host_byte(struct mm_route_acc *a, __u8 ch)
{
	__u8 len = a->host_len;

	if (a->host_state)
		return;
	if (ch == ' ' || ch == '\t') {
		if (len)
			a->host_state = 2; /* trailing OWS */
		return;
	}
	if (ch == ':') { /* port in Host is ignored */
		a->host_state = 1;
		return;
	}
	if (len >= MM_HOST_MAX) {
		a->host_state = 3; /* too long: user space decides */
		return;
	}
	ch = lower(ch);
	*IDX(a->host, len, MM_HOST_MAX) = ch;
	a->host_len = len + 1;
	a->host_hash = fnv1a64_step(a->host_hash, ch);
	if (ch == '.')
		host_dot(a, len);
}

static __always_inline int header_value_byte(struct mm_lctx *x, __u8 ch)
{
	struct mm_parser *p = x->p;

	switch (p->hdr) {
	case HDR_HOST:
		if (x->s->is_req)
			host_byte(&x->s->ra, ch);
		break;
	case HDR_CL:
		if (ch >= '0' && ch <= '9') {
			if (p->cl > (1ULL << 50))
				p->cl_bad = 1;
			p->cl = p->cl * 10 + (ch - '0');
			p->has_cl = 1;
		} else if (ch != ' ' && ch != '\t') {
			p->cl_bad = 1;
		}
		break;
	case HDR_TE:
	case HDR_UPGRADE:
		if (ch != ' ' && ch != '\t')
			p->te_tail = (p->te_tail << 8) | lower(ch);
		break;
	}
	return 0;
}

/* "h2c" as te_tail: the whole value of an Upgrade header */
#define UP_H2C 0x683263ULL

static __always_inline void end_header_line(struct mm_parser *p)
{
	if (p->hdr == HDR_TE)
		p->chunked = (p->te_tail & ((1ULL << 56) - 1)) == TE_CHUNKED;
	else if (p->hdr == HDR_UPGRADE)
		p->up_h2c = p->te_tail == UP_H2C;
}

static __always_inline long garbage(struct mm_lctx *x, __u32 i)
{
	x->s->b_ev = x->p->state > PS_END_LF ? BEV_GARBAGE_BODY : BEV_GARBAGE;
	x->p->state = PS_OPAQUE;
	x->s->b_used = i + 1;
	return 1;
}

/*
 * N more bytes of the request head: user space, if it has to finish the
 * request, gets the first MM_HEAD_MAX of them (head_copy.bpf.h copies them
 * out of the windows they were parsed in).
 */
static __always_inline void head_count(struct mm_conn *c, __u32 n)
{
	if (c->head_len + n > MM_HEAD_MAX)
		c->head_trunc = 1;
	c->head_len += n;
}

static __always_inline long parse_byte(__u32 i, void *ctx)
{
	struct mm_lctx *x = ctx;
	struct mm_parser *p = x->p;
	struct mm_conn *c = x->c;
	__u8 ch = *IDX(x->s->buf, i, MM_SCRATCH);
	__u8 st = p->state;

	if (x->s->is_req && st >= PS_METHOD && st <= PS_END_LF)
		head_count(c, 1);

	switch (st) {
	case PS_START:
		if (ch == '\r' || ch == '\n')
			return 0; /* CRLF between messages is allowed */
		msg_reset(p);
		if (x->s->is_req) {
			start_request(x);
			c->head_len = 1;
			p->state = PS_METHOD;
			/* fallthrough to the method byte */
		} else {
			c->resp_started = 1;
			if (ch != 'H')
				return garbage(x, i);
			p->state = PS_SVERSION;
			return 0;
		}
		/* fallthrough */
	case PS_METHOD:
		if (ch == ' ') {
			if (!p->tok_len)
				return garbage(x, i);
			p->state = PS_TARGET;
			p->tok_len = 0;
			return 0;
		}
		if (!(ch >= 'A' && ch <= 'Z') || p->tok_len >= 8)
			return garbage(x, i);
		p->tok = (p->tok << 8) | ch;
		p->tok_len++;
		return 0;
	case PS_TARGET:
		if (!p->tok_len) {
			p->tok_len = 1;
			x->s->ra.target_ok = ch == '/';
		}
		if (ch == ' ') {
			p->state = PS_VERSION;
		} else if (ch == '?') {
			p->state = PS_QUERY;
		} else if (ch < 0x21 || ch == 0x7f) {
			return garbage(x, i);
		} else {
			struct mm_route_acc *a = &x->s->ra;

			if (ch == '/') {
				if (a->nbounds < MM_PATH_PREFIXES)
					*IDX(a->bounds, a->nbounds,
					     MM_PATH_PREFIXES) = a->path_hash;
				if (a->nbounds < 255)
					a->nbounds++;
			}
			a->path_hash = fnv1a64_step(a->path_hash, ch);
		}
		return 0;
	case PS_QUERY:
		if (ch == ' ')
			p->state = PS_VERSION;
		else if (ch < 0x21)
			return garbage(x, i);
		return 0;
	case PS_VERSION:
		if (ch == '\n')
			p->state = PS_LINE;
		return 0;
	case PS_SVERSION:
		if (ch == ' ') {
			p->state = PS_SCODE;
			p->tok = 0;
			p->tok_len = 0;
		} else if (ch == '\n' || p->tok_len++ > 10) {
			return garbage(x, i);
		}
		return 0;
	case PS_SCODE:
		if (ch >= '0' && ch <= '9' && p->tok_len < 3) {
			p->tok = p->tok * 10 + (ch - '0');
			p->tok_len++;
			return 0;
		}
		/* 000-099 are no status (RFC 9110 15): a 0 would read as "aborted" */
		if (p->tok_len != 3 || p->tok < 100)
			return garbage(x, i);
		p->state = ch == '\n' ? PS_LINE : PS_SREASON;
		return 0;
	case PS_SREASON:
		if (ch == '\n')
			p->state = PS_LINE;
		return 0;
	case PS_LINE:
		if (ch == '\r') {
			p->state = PS_END_LF;
			return 0;
		}
		if (ch == '\n')
			goto head_end;
		p->name[0] = lower(ch);
		p->name_len = 1;
		p->hdr = HDR_OTHER;
		p->state = PS_NAME;
		return 0;
	case PS_NAME:
		if (ch == ':') {
			classify_header(p);
			if (p->hdr == HDR_HOST &&
			    (!x->s->is_req || x->s->ra.host_len ||
			     x->s->ra.host_state))
				p->hdr = HDR_OTHER; /* first Host wins */
			p->state = PS_VALUE;
			return 0;
		}
		/*
		 * A line without ':' (invalid, RFC 9112 5.1): nginx answers
		 * 400 to it, so the request is still an exchange; the word
		 * path (line_start) skips such lines too, so any split of the
		 * bytes parses the same.
		 */
		if (ch == '\n') {
			p->state = PS_LINE;
			return 0;
		}
		/*
		 * The mask only shows the verifier a bound (clang drops the
		 * compare's): the index is below MM_NAME_MAX, and any masked
		 * one stays inside struct mm_parser.
		 */
		if (p->name_len < MM_NAME_MAX)
			*IDX(p->name, p->name_len, 32) = lower(ch);
		if (p->name_len < 255)
			p->name_len++;
		return 0;
	case PS_VALUE:
		if (ch == '\n') {
			end_header_line(p);
			p->state = PS_LINE;
			return 0;
		}
		if (ch != '\r')
			header_value_byte(x, ch);
		return 0;
	case PS_END_LF:
		if (ch != '\n')
			return garbage(x, i);
		goto head_end;
	case PS_CSIZE:
	case PS_CEXT:
		if (ch == '\n') {
			if (!p->rem) {
				p->state = PS_TLINE;
				return 0;
			}
			p->state = PS_CDATA;
			/*
			 * A chunk that ends inside this window is read through
			 * here: stopping per chunk would spend one window per
			 * chunk, and bodies of many small chunks ran out of them.
			 * A longer one is skipped by arithmetic, not copied.
			 */
			if (p->rem <= x->s->b_n - (i + 1))
				return 0;
			x->s->b_ev = BEV_SKIP;
			x->s->b_used = i + 1;
			return 1;
		}
		if (st == PS_CEXT || ch == '\r')
			return 0;
		if (ch == ';' || ch == ' ' || ch == '\t') {
			p->state = PS_CEXT;
			return 0;
		}
		{
			__u8 v;

			if (ch >= '0' && ch <= '9')
				v = ch - '0';
			else if (lower(ch) >= 'a' && lower(ch) <= 'f')
				v = lower(ch) - 'a' + 10;
			else
				return garbage(x, i);
			if (p->rem >> 56)
				return garbage(x, i);
			p->rem = (p->rem << 4) | v;
		}
		return 0;
	case PS_CDATA:
		if (!--p->rem)
			p->state = PS_CDATA_END;
		return 0;
	case PS_CDATA_END:
		if (ch == '\n') {
			p->state = PS_CSIZE;
			p->rem = 0;
		} else if (ch != '\r') {
			return garbage(x, i);
		}
		return 0;
	case PS_TLINE:
		if (ch == '\r') {
			p->state = PS_TEND_LF;
			return 0;
		}
		if (ch == '\n')
			goto msg_end;
		p->state = PS_TREST;
		return 0;
	case PS_TREST:
		if (ch == '\n')
			p->state = PS_TLINE;
		return 0;
	case PS_TEND_LF:
		if (ch != '\n')
			return garbage(x, i);
		goto msg_end;
	default:
		/* skip states never reach the byte loop */
		x->s->b_used = i;
		return 1;
	}

head_end:
	x->s->b_ev = BEV_HEAD_END;
	x->s->b_used = i + 1;
	return 1;
msg_end:
	p->state = PS_START;
	x->s->b_ev = BEV_MSG_END;
	x->s->b_used = i + 1;
	return 1;
}

/* States that only wait for the end of the line: bytes in between unread. */
static __always_inline bool to_eol(const struct mm_parser *p)
{
	return p->state == PS_VERSION || p->state == PS_SREASON ||
	       p->state == PS_TREST ||
	       (p->state == PS_VALUE && p->hdr == HDR_OTHER);
}

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define LFS   0x0a0a0a0a0a0a0a0aULL

/*
 * The 8 bytes at P, at any alignment. clang 14's BPF target knows no
 * unaligned load: it splits an 8-byte memcpy from a char buffer into 8
 * byte loads, 7 shifts and 7 ors (it was the parser's hottest line in a
 * line profile). The verifier allows an unaligned load from a map value
 * where the JIT's arch has efficient unaligned access (x86-64, arm64: the
 * arches this object is built for), so one ldxdw in asm does it (a cast
 * would tell clang the index is a multiple of 8). The parser's user-space
 * builds (fuzzing, under UBSan) keep the memcpy.
 */
static __always_inline __u64 load_u64(const char *p)
{
	__u64 w;

#ifdef __bpf__
	asm volatile("%[w] = *(u64 *)(%[p] + 0)" : [w] "=r"(w) : [p] "r"(p));
#else
	__builtin_memcpy(&w, p, 8);
#endif
	return w;
}

/* The same for a store (see load_u64()). */
static __always_inline void store_u64(char *p, __u64 w)
{
#ifdef __bpf__
	asm volatile("*(u64 *)(%[p] + 0) = %[w]"
		     :
		     : [p] "r"(p), [w] "r"(w)
		     : "memory");
#else
	__builtin_memcpy(p, &w, 8);
#endif
}

/* The 8 bytes at buf[i], or false when fewer are left in the window. */
static __always_inline bool load_word(struct mm_lctx *x, __u32 i, __u64 *w)
{
	__u32 j = i;

	if (i + 8 > x->s->b_n)
		return false;
	barrier_var(j);
	j &= MM_SCRATCH - 1;
	if (j > MM_SCRATCH - 8)
		return false;
	*w = load_u64(&x->s->buf[j]);
	return true;
}

/*
 * The word at buf[i] and how many of its bytes are in the window: 8, fewer
 * at the window's end, 0 when none or when the word would cross the scratch
 * buffer's end. Bytes past the window read as 0, which ends every word
 * path (a real NUL goes to the byte path), so the paths need no count
 * checks: fewer branches for the verifier to walk. The end of a head is
 * mostly the end of a read or of a writev's head iovec: without this, its
 * last 7 bytes went one step each.
 */
static __always_inline __u32 load_tail(struct mm_lctx *x, __u32 i, __u64 *w)
{
	__u32 j = i, n;

	if (i >= x->s->b_n)
		return 0;
	n = x->s->b_n - i;
	barrier_var(j);
	j &= MM_SCRATCH - 1;
	if (j > MM_SCRATCH - 8)
		return 0;
	*w = load_u64(&x->s->buf[j]);
	if (n >= 8)
		return 8;
	*w &= (1ULL << (8 * n)) - 1;
	return n;
}

/* What the byte path does with the '\n' that ends a line we skip. */
static __always_inline void skipped_line_end(struct mm_parser *p)
{
	if (p->state == PS_TREST) {
		p->state = PS_TLINE;
	} else {
		/* PS_VERSION, PS_SREASON, PS_VALUE of a header we do not read */
		end_header_line(p);
		p->state = PS_LINE;
	}
}

/*
 * In a line we do not read (a header value we do not need, the rest of a
 * request or status line, a trailer): step over every byte up to and with
 * the next '\n', a word at a time. The lowest zero byte of
 * w ^ "\n\n\n\n\n\n\n\n" (the classic has-zero-byte test: exact for the lowest
 * one) is the first '\n'. Returns the bytes stepped over, 0 when none are
 * left in the window.
 */
static __always_inline __u32 skip_in_line(struct mm_lctx *x, __u32 i)
{
	__u32 n = 0;

	/* up to MM_SKIP_WORDS words a step: most skipped lines in one */
#pragma unroll
	for (int j = 0; j < MM_SKIP_WORDS; j++) {
		__u64 w, v, m;
		__u32 k, avail;

		avail = load_tail(x, i + n, &w);
		if (!avail)
			return n;
		v = w ^ LFS;
		m = (v - ONES) & ~v & HIGHS;
		/* no '\n' in the word (bytes past the window read as 0) */
		if (!m) {
			if (x->s->is_req)
				head_count(x->c, avail);
			n += avail;
			if (avail < 8)
				return n;
			continue;
		}
		/*
		 * The '\n' is in this word: consume it too, with the state
		 * change the byte path would make. Its index, without a branch
		 * (each one multiplies the verifier's paths): the bytes below
		 * the lowest set bit of m, counted a byte at a time; only here,
		 * on a line's last word.
		 */
		k = ((((((m & -m) - 1) >> 7) & ONES) * ONES) >> 56) + 1;
		skipped_line_end(x->p);
		if (x->s->is_req)
			head_count(x->c, k);
		return n + k;
	}
	return n;
}

/* bytes 'A'..'Z' of w made lower case, the rest unchanged (SWAR) */
static __always_inline __u64 lower_word(__u64 w)
{
	__u64 h = w & 0x7f7f7f7f7f7f7f7fULL;
	__u64 ge_a = h + 0x3f3f3f3f3f3f3f3fULL; /* high bit: byte >= 'A' */
	__u64 gt_z = h + 0x2525252525252525ULL; /* high bit: byte > 'Z' */

	return w | (((ge_a & ~gt_z) & ~w & HIGHS) >> 2);
}

#define W_CONTENT  0x2d746e65746e6f63ULL /* "content-" little-endian */
#define W_TRANSFER 0x726566736e617274ULL /* "transfer" */
#define W_HOST     0x3a74736f68ULL       /* "host:" */
#define M_HOST     0xffffffffffULL

#define W_LENGTH  0x203a6874676e656cULL /* "length: " */
#define W_HTTP11  0x312e312f50545448ULL /* "HTTP/1.1" */
#define W_HTTP10  0x302e312f50545448ULL /* "HTTP/1.0" */
#define W_GET     0x20544547ULL         /* "GET " */
#define W_PUT     0x20545550ULL         /* "PUT " */
#define W_UPGRADE 0x3a65646172677075ULL /* "upgrade:" */
#define W_POST    0x2054534f50ULL       /* "POST " */
#define W_HEAD    0x2044414548ULL       /* "HEAD " */
#define M_4       0xffffffffULL
#define M_5       0xffffffffffULL
#define M_6       0xffffffffffffULL
#define W_ENCODIN 0x6e69646f636e652dULL /* "-encodin" */
#define W_G_CHUNK 0x6b6e756863203a67ULL /* "g: chunk" */
#define W_ED_CRLF 0x0a0d6465ULL         /* "ed\r\n" */

/*
 * "Transfer-Encoding: chunked" (any case), the whole line, in a response
 * head: what the byte path does with it, in one step (it took 28). Any
 * other form, and requests (whose head bytes are copied), go byte by byte.
 */
static __always_inline __u32 te_chunked_line(struct mm_lctx *x, __u32 i)
{
	struct mm_parser *p = x->p;
	__u64 w2, w3, w4;

	if (x->s->is_req || !load_word(x, i + 8, &w2) ||
	    lower_word(w2) != W_ENCODIN || !load_word(x, i + 16, &w3) ||
	    lower_word(w3) != W_G_CHUNK || load_tail(x, i + 24, &w4) < 4 ||
	    (lower_word(w4) & M_4) != W_ED_CRLF)
		return 0;
	p->hdr = HDR_TE;
	/* the value's seven bytes, shifted in as the byte path does */
	p->te_tail = (p->te_tail << 56) | TE_CHUNKED;
	end_header_line(p);
	p->state = PS_LINE;
	return 28;
}

/* A hex digit's value + 1, 0 for any other byte (chunk_size_line()). */
static const __u8 mm_hex1[256] = {
	['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,
	['6'] = 7,  ['7'] = 8,  ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12,
	['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16, ['A'] = 11, ['B'] = 12,
	['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/*
 * The value and count of up to 6 hex digits at the start of W, as
 * (value << 8 | count). Without a branch per digit (each one multiplied
 * the verifier's paths: 406k -> 652k insns): a table lookup, and the
 * digits' run kept as a 0/1 factor. A global function: inlined, its
 * values spilled in parse_block()'s frame made it 80 bytes bigger, past
 * the 512 bytes of combined stack 6.1's verifier allows the TLS programs
 * (verifier: 444k insns inlined, 518k as a static function, 503k global).
 */
__noinline __u64 mm_chunk_hex(__u64 w)
{
	__u32 run = 1, k = 0;
	__u64 v = 0;

#pragma unroll
	for (int j = 0; j < 6; j++) {
		__u32 d1 = mm_hex1[(w >> (8 * j)) & 0xff];

		run &= (d1 + 15) >> 4;
		v = (v << (4 * run)) | ((d1 - 1) & (0U - run) & 15);
		k += run;
	}
	return v << 8 | k;
}

/*
 * Chunked framing a step at a time instead of a byte at a time: a size
 * line of up to 6 hex digits and CRLF, the data of a chunk that ends in
 * this window (the byte path counts it down byte by byte), the CRLF after
 * it. Other forms (extensions, bare LF, longer sizes, split lines) go to
 * the byte path. The size line runs only at a line's start or after
 * leading zeros (rem == 0), so the value is the same as the byte path's.
 */
static __always_inline __u32 chunk_size_line(struct mm_lctx *x, __u32 i)
{
	struct mm_scratch *s = x->s;
	struct mm_parser *p = x->p;
	__u32 avail, k, n;
	__u64 w, v;

	avail = load_tail(x, i, &w);
	/* w is unset then: clang 14 passed whatever register to the call */
	if (!avail)
		return 0;
	v = mm_chunk_hex(w);
	k = v & 0xff;
	v >>= 8;
	if (!k || k + 2 > avail || ((w >> (8 * k)) & 0xffff) != 0x0a0d)
		return 0;
	n = k + 2;
	p->rem = v;
	if (!v) {
		p->state = PS_TLINE;
		return n;
	}
	p->state = PS_CDATA;
	if (v > s->b_n - (i + n)) {
		/* ends past this window: skipped by arithmetic, as in parse_byte */
		s->b_ev = BEV_SKIP;
		s->b_used = i + n;
	}
	return n;
}

static __always_inline __u32 chunk_data_run(struct mm_lctx *x, __u32 i)
{
	struct mm_parser *p = x->p;
	__u32 left = x->s->b_n - i;
	__u32 n = p->rem < left ? p->rem : left;

	p->rem -= n;
	if (!p->rem)
		p->state = PS_CDATA_END;
	return n;
}

static __always_inline __u32 chunk_data_end(struct mm_lctx *x, __u32 i)
{
	struct mm_scratch *s = x->s;

	if (i + 2 > s->b_n || *IDX(s->buf, i, MM_SCRATCH) != '\r' ||
	    *IDX(s->buf, i + 1, MM_SCRATCH) != '\n')
		return 0;
	x->p->state = PS_CSIZE;
	x->p->rem = 0;
	return 2;
}

/*
 * At the start of a header line, one word tells whether the parser needs
 * the header at all: "Host:" (its value then goes to host_word()) and
 * "Content-Length: " (cl_word()) are recognised in one and two words, a
 * response's whole "Transfer-Encoding: chunked" line in four; any other
 * Transfer-Encoding and Upgrade are read byte by byte; every other header
 * (most of them, Content-Type too) goes straight to the skipping state. Routes that match on other
 * headers are decided in user space from the copied head. Returns the
 * bytes consumed (the state may have moved without consuming any).
 */
static __always_inline __u32 line_start(struct mm_lctx *x, __u32 i)
{
	struct mm_parser *p = x->p;
	__u64 w, w2, lw;

	if (!load_word(x, i, &w))
		return 0;
	/* '\r' or '\n' first: the empty line, parsed byte by byte */
	if ((__u8)w == '\r' || (__u8)w == '\n')
		return 0;
	lw = lower_word(w);
	if (lw == W_CONTENT && !load_word(x, i + 8, &w2))
		return 0;
	/*
	 * "Content-" and not "length": Content-Type, -Encoding and the rest
	 * are not read. It took a byte step per name byte: 13 of them in
	 * nearly every response head.
	 */
	if (lw == W_CONTENT && (lower_word(w2) & M_6) != (W_LENGTH & M_6))
		lw = 0;
	if (lw == W_CONTENT) {
		/* "Content-Length" without ": " after it: the byte path */
		if (lower_word(w2) != W_LENGTH)
			return 0;
		if (x->s->is_req)
			head_count(x->c, 16);
		p->hdr = HDR_CL;
		p->state = PS_VALUE;
		return 16;
	}
	if (lw == W_TRANSFER)
		return te_chunked_line(x, i);
	if (lw == W_UPGRADE)
		return 0;
	if ((lw & M_HOST) == W_HOST && x->s->is_req) {
		struct mm_route_acc *a = &x->s->ra;
		/* and the usual one space: the value's words start at its name */
		__u32 n = (__u8)(w >> 40) == ' ' ? 6 : 5;

		head_count(x->c, n);
		/* first Host wins, as in the byte path */
		p->hdr = a->host_len || a->host_state ? HDR_OTHER : HDR_HOST;
		p->state = PS_VALUE;
		return n;
	}
	p->hdr = HDR_OTHER;
	p->state = PS_VALUE;
	return 0;
}

/*
 * Path bytes of the request target, a word at a time: hashed and their '/'
 * boundaries recorded as the byte path does, up to the first byte that ends
 * or leaves the path. A ' ' ends it here (on to the version, skipped); a
 * '?' or a control byte is left to the byte path.
 */
static __always_inline __u32 target_word(struct mm_lctx *x, __u32 i)
{
	struct mm_route_acc *a = &x->s->ra;
	struct mm_parser *p = x->p;
	__u32 k, avail;
	__u64 w, h;

	avail = load_tail(x, i, &w);
	if (!avail)
		return 0;
	if (!p->tok_len) {
		/* the first target byte: as the byte path's PS_TARGET */
		p->tok_len = 1;
		a->target_ok = (__u8)w == '/';
	}
	h = a->path_hash;
#pragma unroll
	for (k = 0; k < 8; k++) {
		__u8 ch = w >> (8 * k);

		if (ch < 0x21 || ch == 0x7f || ch == '?')
			break;
		if (ch == '/') {
			if (a->nbounds < MM_PATH_PREFIXES)
				*IDX(a->bounds, a->nbounds, MM_PATH_PREFIXES) =
					h;
			if (a->nbounds < 255)
				a->nbounds++;
		}
		h = fnv1a64_step(h, ch);
	}
	a->path_hash = h;
	if ((__u8)(w >> (8 * (k & 7))) == ' ' && k < 8) {
		k++;
		p->state = PS_VERSION;
	} else if ((__u8)(w >> (8 * (k & 7))) == '?' && k < 8) {
		k++;
		p->state = PS_QUERY;
	}
	if (k)
		head_count(x->c, k);
	return k;
}

/*
 * The query of a request target: not part of any route's path, only
 * copied (a query-parameter match is decided in user space). Up to the
 * first byte below 0x21 (the lowest one: exact, as in skip_in_line()); a
 * space ends the target, any other such byte is the byte path's. It took
 * a step per byte: tracking parameters run to hundreds.
 */
static __always_inline __u32 query_word(struct mm_lctx *x, __u32 i)
{
	__u64 w, m;
	__u32 k, avail;

	avail = load_tail(x, i, &w);
	if (!avail)
		return 0;
	m = (w - ONES * 0x21) & ~w & HIGHS;
	k = (((((m & -m) - 1) >> 7) & ONES) * ONES) >> 56;
	if (k > avail)
		k = avail;
	if (k < avail && (__u8)(w >> (8 * (k & 7))) == ' ') {
		k++;
		x->p->state = PS_VERSION;
	}
	if (k)
		head_count(x->c, k);
	return k;
}

/*
 * The end of a header value we read (Host, Content-Length) at byte k of w:
 * CRLF or LF ends the line as the byte path's PS_VALUE does. Returns the
 * bytes of the line end consumed (0 when it is not in the word).
 */
static __always_inline __u32 value_end(struct mm_parser *p, __u64 w, __u32 k)
{
	__u16 two = k < 8 ? (__u16)(w >> (8 * (k & 7))) : 0;
	__u32 n = 0;

	if (two == ('\r' | '\n' << 8) && k < 7)
		n = 2;
	else if ((__u8)two == '\n')
		n = 1;
	if (n) {
		end_header_line(p);
		p->state = PS_LINE;
	}
	return n;
}

#define BYTES(b) ((__u64)(b)*ONES)

/*
 * Bit 7 of each byte set where that byte of v is below N (1..0x80): exact
 * for every byte, no carry crosses one (the test in skip_in_line() is
 * exact for the lowest only). N = 1 finds zero bytes.
 */
static __always_inline __u64 bytes_below(__u64 v, __u8 n)
{
	return ~(((v & 0x7f7f7f7f7f7f7f7fULL) + BYTES(0x80 - n)) | v) & HIGHS;
}

/*
 * Eight bytes inside a Host name, none of them one host_byte() or the
 * value's end treats apart (OWS, ':', CR, LF, NUL: those words, and any
 * with another control byte, go byte by byte) and all fitting in host[]:
 * what host_byte() does with
 * each, with one store and one length update. host_byte() took ~40
 * instructions a byte, most of them reloading the fields it had just
 * stored (a byte store into host[] may alias any of them).
 */
static __always_inline bool host_name_word(struct mm_route_acc *a, __u64 w)
{
	__u8 len = a->host_len;
	__u64 lw, h, dots;

	if (a->host_state || len > MM_HOST_MAX - 8)
		return false;
	if (bytes_below(w, 0x21) | bytes_below(w ^ BYTES(':'), 1))
		return false;
	lw = lower_word(w);
	store_u64(IDX(a->host, len, MM_HOST_MAX), lw);
	h = a->host_hash;
#pragma unroll
	for (int k = 0; k < 8; k++)
		h = fnv1a64_step(h, lw >> (8 * k));
	a->host_hash = h;
	a->host_len = len + 8;
	dots = bytes_below(lw ^ BYTES('.'), 1);
	if (dots) {
#pragma unroll
		for (int k = 0; k < 8; k++)
			if (dots & (0x80ULL << (8 * k)))
				host_dot(a, len + k);
	}
	return true;
}

/*
 * The Host value of a request a word at a time, byte for byte what
 * host_byte() does, and its line end.
 */
static __always_inline __u32 host_word(struct mm_lctx *x, __u32 i)
{
	struct mm_conn *c = x->c;
	__u32 k, avail;
	__u64 w;

	avail = load_tail(x, i, &w);
	if (!avail)
		return 0;
	if (avail == 8 && host_name_word(&x->s->ra, w)) {
		head_count(c, 8);
		return 8;
	}
#pragma unroll
	for (k = 0; k < 8; k++) {
		__u8 ch = w >> (8 * k);

		if (!ch || ch == '\r' || ch == '\n')
			break;
		host_byte(&x->s->ra, ch);
	}
	k += value_end(x->p, w, k);
	if (k)
		head_count(x->c, k);
	return k;
}

/*
 * The digits of a Content-Length value a word at a time, as
 * header_value_byte() takes them, and its line end. Anything else (OWS,
 * a bad byte) is left to the byte path.
 */
static __always_inline __u32 cl_word(struct mm_lctx *x, __u32 i)
{
	struct mm_parser *p = x->p;
	__u32 k, avail;
	__u64 w;

	avail = load_tail(x, i, &w);
	if (!avail)
		return 0;
#pragma unroll
	for (k = 0; k < 8; k++) {
		__u8 ch = w >> (8 * k);

		if (ch < '0' || ch > '9')
			break;
		if (p->cl > (1ULL << 50))
			p->cl_bad = 1;
		p->cl = p->cl * 10 + (ch - '0');
		p->has_cl = 1;
	}
	k += value_end(p, w, k);
	if (k && x->s->is_req)
		head_count(x->c, k);
	return k;
}

/*
 * The empty line that ends a head, CRLF, in one step: what the byte path
 * does with its two bytes (PS_LINE, PS_END_LF, head_end). False when the
 * two bytes are not both in the window or are something else.
 */
static __always_inline bool head_end_crlf(struct mm_lctx *x, __u32 i)
{
	struct mm_scratch *s = x->s;

	if (i + 2 > s->b_n || *IDX(s->buf, i, MM_SCRATCH) != '\r' ||
	    *IDX(s->buf, i + 1, MM_SCRATCH) != '\n')
		return false;
	if (s->is_req) {
		head_count(x->c, 2);
	}
	x->p->state = PS_END_LF;
	s->b_pos = i + 2;
	s->b_used = i + 2;
	s->b_ev = BEV_HEAD_END;
	return true;
}

static __always_inline __u8 byte_at(struct mm_lctx *x, __u32 i)
{
	return *IDX(x->s->buf, i, MM_SCRATCH);
}

/*
 * The common starts of a message in one step: "GET " / "PUT " / "POST " /
 * "HEAD " for a request, "HTTP/1.x NNN " for a status line. Anything else
 * (other methods, a split start, CRLF between messages) goes byte by byte.
 * Returns the bytes consumed.
 */
static __always_inline __u32 msg_start(struct mm_lctx *x, __u32 i)
{
	struct mm_parser *p = x->p;
	__u64 w, tok;
	__u32 k, d;

	if (!load_word(x, i, &w))
		return 0;
	if (x->s->is_req) {
		if ((w & M_4) == W_GET) {
			tok = TOK3('G', 'E', 'T');
			k = 4;
		} else if ((w & M_4) == W_PUT) {
			tok = TOK3('P', 'U', 'T');
			k = 4;
		} else if ((w & M_5) == W_POST) {
			tok = TOK4('P', 'O', 'S', 'T');
			k = 5;
		} else if ((w & M_5) == W_HEAD) {
			tok = TOK4('H', 'E', 'A', 'D');
			k = 5;
		} else {
			return 0;
		}
		msg_reset(p);
		start_request(x);
		head_count(x->c, k);
		p->tok = tok;
		p->state = PS_TARGET;
		return k;
	}
	if ((w != W_HTTP11 && w != W_HTTP10) || i + 13 > x->s->b_n ||
	    byte_at(x, i + 8) != ' ')
		return 0;
	d = 0;
#pragma unroll
	for (int j = 9; j < 12; j++) {
		__u8 ch = byte_at(x, i + j);

		if (ch < '0' || ch > '9')
			return 0;
		d = d * 10 + (ch - '0');
	}
	/* below 100 is not a status (RFC 9110 15): byte by byte, as garbage */
	if (d < 100 ||
	    (byte_at(x, i + 12) != ' ' && byte_at(x, i + 12) != '\r'))
		return 0;
	msg_reset(p);
	x->c->resp_started = 1;
	p->tok = d;
	p->tok_len = 3;
	p->state = PS_SREASON;
	return 12;
}

/*
 * Up to mm_parse_steps steps per callback, a step being one byte or, in a line we
 * skip, up to 8: bpf_loop with a constant callback is inlined into a direct
 * call since 5.19/6.0, the per-byte state machine ~2 ns, the word skip less.
 */
/*
 * One parser step: a word path when the state has one, else one byte.
 * Returns 1 to stop the block. Its code exists once (parse_block's loop is
 * not unrolled): under a busy proxy the data path runs with cold caches,
 * where code size costs more than anything. Inlined into that loop rather
 * than called: under SRSO "Safe RET" every return is mispredicted (its
 * return thunks are in JITed BPF too), and a call per step cost 17 % of a
 * warm exchange (bench_bpf_exchange: 3 455-3 517 -> 2 885-2 914 ns).
 */
static __always_inline long parse_step(struct mm_lctx *x)
{
	struct mm_parser *p = x->p;
	__u32 i = x->s->b_pos, n = 0;
	__u8 st = p->state;

	if (i >= x->s->b_n)
		return 1;
	if (!MM_WORD_PATHS())
		goto byte;
	if (st == PS_START) {
		n = msg_start(x, i);
	} else if (st == PS_LINE) {
		n = line_start(x, i);
		if (!n && p->state == PS_LINE && head_end_crlf(x, i))
			return 1;
	} else if (st == PS_TARGET) {
		n = target_word(x, i);
	} else if (st == PS_QUERY) {
		n = query_word(x, i);
	} else if (st == PS_VALUE && p->hdr == HDR_HOST) {
		n = host_word(x, i);
	} else if (st == PS_VALUE && p->hdr == HDR_CL) {
		n = cl_word(x, i);
	} else if (st == PS_CSIZE && !p->rem) {
		n = chunk_size_line(x, i);
		if (x->s->b_ev == BEV_SKIP) {
			x->s->b_pos = i + n;
			return 1;
		}
	} else if (st == PS_CDATA) {
		n = chunk_data_run(x, i);
	} else if (st == PS_CDATA_END) {
		n = chunk_data_end(x, i);
	}
	/* a status line's reason, a request's version: on in the same step */
	if (!n && to_eol(p))
		n = skip_in_line(x, i);
	if (n) {
		x->s->b_pos = i + n;
		return 0;
	}
byte:
	x->s->b_pos = i + 1;
	return parse_byte(i, x);
}

/*
 * Set before load (a frozen constant: the verifier walks exactly this many
 * steps); loader.c lowers it when the verifier refuses the object.
 */
const volatile __u32 mm_parse_steps = MM_BLOCK;

MM_LOOP_CB parse_block(__u32 blk, void *ctx)
{
	struct mm_lctx *x = ctx;
	/* a bounded loop (5.3+): the verifier walks it, the JIT emits it once */
#pragma clang loop unroll(disable)
	for (int k = 0; k < MM_PARSE_STEPS_MAX && k < mm_parse_steps; k++)
		if (parse_step(x))
			return 1;
	return x->s->b_pos >= x->s->b_n;
}

#endif /* MM_HTTP_PARSE_BPF_H */
