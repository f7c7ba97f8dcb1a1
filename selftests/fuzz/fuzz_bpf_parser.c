// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target: the data path's HTTP/1.x parser and exchange
 * bookkeeping (the bpf/ headers, through bpf_parser_glue.c) on one connection fed
 * random request and response bytes split at random points.
 *
 * Input: one control byte, then operations. Control: bit 0 the connection
 * starts at connect() (upstream leg; else first sight decides), bit 1 the
 * operations go through writev/readv iovecs of (bits 2-4) + 1 bytes each,
 * bit 5 the route table has nothing that leaves a request to user space
 * (MM_CFG_DEFERS off: heads that span windows are not kept), bits 6 and 7
 * both set: mm_route_accs is full (no update succeeds). Operation: a byte H then H & 0x7f data bytes, a read when H & 0x80 (else
 * a write); H & 0x7f == 0 is a read of 0 bytes (EOF). The connection closes
 * after the last operation.
 *
 * Each input runs twice: as given, and one byte per syscall. Checked:
 *   - no crash, no ASan/UBSan report, no user read outside what the syscall
 *     handed over;
 *   - parser states inside their enums, pipeline indexes in range;
 *   - every request started is reported exactly once (tracked or
 *     MM_EV_UNTRACKED, aborted at close if need be), except one whose head
 *     was cut by non-HTTP bytes and those past the pipeline's limit, which
 *     are counted (MM_STAT_PIPELINE_LOST); a request whose head was
 *     complete is never dropped; request bytes never end an exchange;
 *   - a status is 0 only on an aborted exchange, else within 100..999;
 *   - with mm_route_accs full, no downstream request whose head spanned
 *     reads is attributed by the kernel: each is left to user space
 *     (MM_ROUTE_DEFER) or unknown, and counted (MM_STAT_ROUTE_STATE_LOST);
 *   - how the bytes were split into syscalls changes no event (except when
 *     a per-syscall scan limit was hit, which is counted, or mm_route_accs
 *     is full, which sends a head cut by its reads to user space); the
 *     byte-by-byte run takes the byte path only (fzb_word_paths = 0), so
 *     this also holds every word path to the byte path. FZB_NO_SPLIT_CHECK=1
 *     in the environment turns this one off (to keep fuzzing the others
 *     while a known split dependence waits for its fix).
 * Run: make fuzz-bpf-parser (builds bin/fuzz_bpf_parser), then
 *   bin/fuzz_bpf_parser -max_total_time=60 -max_len=4096 \
 *     -dict=selftests/fuzz/bpf_parser.dict CORPUS_DIR selftests/fuzz/corpus_parser
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "selftests/fuzz/bpf_parser_glue.h"

#define MAX_EVENTS FZB_EVENTS_MAX

struct run {
	struct mm_http_event ev[MAX_EVENTS];
	char head[MAX_EVENTS][MM_HEAD_MAX];
	int nev;
	uint64_t scan_limited; /* SCAN_LIMIT + IOV_LIMIT */
	uint64_t stray;        /* request bytes between messages (CR, LF) */
	uint64_t garbage;      /* the request stream stopped being HTTP */
};

static struct run split_run, byte_run;

static const uint8_t *cur_data;
static size_t cur_size;

static void fail(const char *what, ...) __attribute__((format(printf, 1, 2)));

static void fail(const char *what, ...)
{
	va_list ap;

	fprintf(stderr, "fuzz_bpf_parser: invariant broken: ");
	va_start(ap, what);
	vfprintf(stderr, what, ap);
	va_end(ap);
	fprintf(stderr, "\ninput (%zu bytes):\n", cur_size);
	for (size_t i = 0; i < cur_size; i++)
		fprintf(stderr, "%s\\x%02x", i && !(i % 32) ? "\n" : "",
			cur_data[i]);
	fprintf(stderr, "\n");
	abort();
}

static void check_state(void)
{
	const struct mm_conn *c = fzb_conn();

	if (c->req.state > PS_OPAQUE || c->resp.state > PS_OPAQUE)
		fail("parser state %u/%u outside enum mm_pstate", c->req.state,
		     c->resp.state);
	if (c->req.hdr > HDR_UPGRADE || c->resp.hdr > HDR_UPGRADE)
		fail("header kind outside enum mm_hdr");
	if (c->count > MM_PIPELINE_DEPTH || c->head >= MM_SLOTS_INLINE)
		fail("pipeline count %u head %u", c->count, c->head);
	if (c->xcount != (c->count > MM_SLOTS_INLINE
				  ? c->count - MM_SLOTS_INLINE
				  : 0) ||
	    (c->xcount && !fzb_ext_live()) || !!c->has_ext != fzb_ext_live())
		fail("pipeline count %u, middle %u, ext %u/%d", c->count,
		     c->xcount, c->has_ext, fzb_ext_live());
	/* the map holds an entry exactly while the flag says so (and so
	 * none once the connection is closed); a saved state is in it */
	if (!!c->ra_held != !!fzb_route_acc_live() || c->ra_held > 1 ||
	    (c->ra_saved == 1 && !c->ra_held) || c->ra_saved > 2)
		fail("route state flags %u/%u, map entry %d", c->ra_held,
		     c->ra_saved, fzb_route_acc_live());
	if (fzb_bad_reads())
		fail("%llu user reads outside the syscall's memory",
		     (unsigned long long)fzb_bad_reads());
}

static void check_events(struct run *r)
{
	int64_t last_seq = -1;

	r->nev = fzb_nevents();
	for (int i = 0; i < r->nev; i++) {
		const struct fzb_event *fe = fzb_event(i);
		const struct mm_http_event *e = (const void *)fe->raw;

		r->ev[i] = *e;
		memcpy(r->head[i], fe->raw + sizeof(*e), MM_HEAD_MAX);
		if (e->type != MM_EVT_EXCHANGE && e->type != MM_EVT_HEAD)
			fail("event %d: type %u", i, e->type);
		if (e->method >= MM_M__COUNT || e->flags & ~0x1f ||
		    e->head_len > MM_HEAD_MAX)
			fail("event %d: method %u flags %#x head_len %u", i,
			     e->method, e->flags, e->head_len);
		if (e->type != MM_EVT_EXCHANGE)
			continue;
		if (!e->status && !(e->flags & MM_EV_ABORTED))
			fail("event %d: status 0 on an exchange not aborted",
			     i);
		if (e->status && (e->status < 100 || e->status > 999))
			fail("event %d: status %u outside 100..999", i,
			     e->status);
		if (!(e->flags & MM_EV_UNTRACKED)) {
			if ((int64_t)e->req_seq <= last_seq)
				fail("event %d: req_seq %u after %lld", i,
				     e->req_seq, (long long)last_seq);
			last_seq = e->req_seq;
		}
	}
	r->scan_limited =
		fzb_stat(MM_STAT_SCAN_LIMIT) + fzb_stat(MM_STAT_IOV_LIMIT);
	if (fzb_stat(MM_STAT_RINGBUF_FULL))
		fail("harness: more events than it keeps");
}

static bool is_req_dir(int is_read)
{
	uint8_t role = fzb_conn()->role;

	if (role == MM_ROLE_UNKNOWN)
		role = is_read ? MM_ROLE_DOWN : MM_ROLE_UP;
	return (role == MM_ROLE_DOWN) == !!is_read;
}

static bool head_state(uint8_t st)
{
	return st <= PS_END_LF && st != PS_SVERSION && st != PS_SCODE &&
	       st != PS_SREASON;
}

/* Walk the operations; BYTEWISE feeds one byte per syscall and counts. */
static void run(const uint8_t *d, size_t n, bool bytewise, struct run *r)
{
	uint8_t ctl = d[0];
	uint64_t heads = 0, dropped = 0, exchanges = 0;
	size_t pos = 1;

	r->stray = 0;
	r->garbage = 0;
	fzb_word_paths = !bytewise;
	fzb_route_accs_full = (ctl & 0xc0) == 0xc0;
	fzb_reset(ctl & 1 ? MM_ROLE_UP : MM_ROLE_UNKNOWN, !(ctl & 0x20));
	while (pos < n) {
		uint8_t h = d[pos++];
		int is_read = h & 0x80;
		size_t len = h & 0x7f;

		if (len > n - pos)
			len = n - pos;
		if (!len) {
			if (is_read)
				fzb_eof();
			check_state();
			continue;
		}
		if (bytewise) {
			for (size_t i = 0; i < len; i++) {
				const struct mm_conn *c = fzb_conn();
				bool req = is_req_dir(is_read);
				uint8_t old = c->req.state, now;
				uint64_t pend0 = c->count + c->untracked;
				uint64_t seq0 = c->next_seq, cut;
				uint64_t lost0 =
					fzb_stat(MM_STAT_PIPELINE_LOST);
				int nev0 = fzb_nevents();

				fzb_buf(is_read, d + pos + i, 1);
				check_state();
				now = c->req.state;
				if (!req)
					continue;
				if (old == PS_START && now == PS_START)
					r->stray++;
				for (int k = nev0; k < fzb_nevents(); k++)
					if (((const struct mm_http_event *)
						     fzb_event(k)
							     ->raw)
						    ->type == MM_EVT_EXCHANGE)
						fail("request byte %zu ended an exchange",
						     pos + i);
				/* requests gone from the pipeline unreported */
				cut = pend0 + (c->next_seq - seq0) -
				      (fzb_stat(MM_STAT_PIPELINE_LOST) -
				       lost0) -
				      (c->count + c->untracked);
				if (cut && !head_state(old))
					fail("byte %zu: a request whose head was complete was dropped (state %u -> %u)",
					     pos + i, old, now);
				dropped += cut;
				if ((old == PS_LINE || old == PS_END_LF) &&
				    (now == PS_START || now == PS_BODY ||
				     now == PS_CSIZE))
					heads++;
			}
		} else if (ctl & 2) {
			struct fzb_iov iov[128];
			size_t piece = ((ctl >> 2) & 7) + 1;
			unsigned int cnt = 0;

			for (size_t off = 0; off < len; off += piece) {
				iov[cnt].base = d + pos + off;
				iov[cnt].len = len - off < piece ? len - off
								 : piece;
				cnt++;
			}
			fzb_iov(is_read, iov, cnt, len);
			check_state();
		} else {
			fzb_buf(is_read, d + pos, len);
			check_state();
		}
		pos += len;
	}
	r->garbage = fzb_stat(MM_STAT_UNPARSED) + fzb_stat(MM_STAT_NOT_HTTP);
	fzb_close();
	check_state();
	check_events(r);
	if (!bytewise)
		return;
	for (int i = 0; i < r->nev; i++) {
		const struct mm_http_event *e = &r->ev[i];

		exchanges += e->type == MM_EVT_EXCHANGE;
		/*
		 * One byte per read: every head spans reads, so with nowhere to
		 * keep its state none may be decided from what was left of it.
		 */
		if (fzb_route_accs_full && e->type == MM_EVT_EXCHANGE &&
		    e->leg == MM_LEG_DOWNSTREAM &&
		    e->route_id != MM_ROUTE_DEFER &&
		    e->route_id != MM_ROUTE_UNKNOWN)
			fail("event %d: route %#x decided in the kernel with mm_route_accs full",
			     i, e->route_id);
	}
	if (exchanges + dropped + fzb_stat(MM_STAT_PIPELINE_LOST) !=
	    fzb_conn()->next_seq)
		fail("%llu requests started, %llu reported, %llu cut by garbage, %llu lost past the pipeline",
		     (unsigned long long)fzb_conn()->next_seq,
		     (unsigned long long)exchanges, (unsigned long long)dropped,
		     (unsigned long long)fzb_stat(MM_STAT_PIPELINE_LOST));
	if (fzb_route_accs_full && heads && !fzb_stat(MM_STAT_ROUTE_STATE_LOST))
		fail("%llu heads cut with mm_route_accs full, none counted lost",
		     (unsigned long long)heads);
	if (heads > exchanges + fzb_stat(MM_STAT_PIPELINE_LOST))
		fail("%llu complete heads, %llu reported",
		     (unsigned long long)heads, (unsigned long long)exchanges);
}

/*
 * Known and left as is (reported to the lead): CR/LF between requests
 * (RFC 9112 2.2 lets a server skip them) count toward the request before
 * when they come in their own read, toward the next one when they share a
 * read with it. With such bytes in the input, req_bytes may differ. The
 * same for bytes after a request head that turn out not to be HTTP (a body
 * the head did not announce, then garbage): they count toward the request
 * up to the end of the parse window that found them.
 */
static bool same(const struct mm_http_event *a, const char *ah,
		 const struct mm_http_event *b, const char *bh, bool stray)
{
	return a->type == b->type && a->leg == b->leg &&
	       a->method == b->method && a->flags == b->flags &&
	       a->status == b->status && a->route_id == b->route_id &&
	       a->rule_idx == b->rule_idx && a->req_seq == b->req_seq &&
	       (stray || a->req_bytes == b->req_bytes) &&
	       a->resp_bytes == b->resp_bytes && a->head_len == b->head_len &&
	       (a->type != MM_EVT_HEAD || !memcmp(ah, bh, a->head_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int split_check = -1;

	if (split_check < 0)
		split_check = !getenv("FZB_NO_SPLIT_CHECK");
	if (size < 2)
		return 0;
	cur_data = data;
	cur_size = size;
	run(data, size, false, &split_run);
	run(data, size, true, &byte_run);
	if (split_run.scan_limited || !split_check || fzb_route_accs_full)
		return 0; /* counted limit: the split changes what is parsed */
	if (split_run.nev != byte_run.nev)
		fail("%d events as split, %d byte by byte", split_run.nev,
		     byte_run.nev);
	for (int i = 0; i < split_run.nev; i++)
		if (!same(&split_run.ev[i], split_run.head[i], &byte_run.ev[i],
			  byte_run.head[i], byte_run.stray || byte_run.garbage))
			fail("event %d differs: split status %u flags %#x req %llu resp %llu route %#x seq %u; bytewise status %u flags %#x req %llu resp %llu route %#x seq %u",
			     i, split_run.ev[i].status, split_run.ev[i].flags,
			     (unsigned long long)split_run.ev[i].req_bytes,
			     (unsigned long long)split_run.ev[i].resp_bytes,
			     split_run.ev[i].route_id, split_run.ev[i].req_seq,
			     byte_run.ev[i].status, byte_run.ev[i].flags,
			     (unsigned long long)byte_run.ev[i].req_bytes,
			     (unsigned long long)byte_run.ev[i].resp_bytes,
			     byte_run.ev[i].route_id, byte_run.ev[i].req_seq);
	return 0;
}
