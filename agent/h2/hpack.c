// SPDX-License-Identifier: Apache-2.0
/*
 * Late-join HPACK on top of nghttp2's inflater. Each representation of a
 * block is parsed here just far enough to know its kind, its index and its
 * length (integers and string lengths; strings are not Huffman-decoded
 * here), then handed to nghttp2 alone:
 *
 *   indexed field, dynamic index of a pre-attach entry     not fed; unknown
 *   literal + incremental indexing, pre-attach name index  fed as a literal
 *                                                          with an empty name,
 *                                                          so the insertion
 *                                                          still happens
 *   literal without/never indexing, pre-attach name index  not fed; unknown
 *   everything else                                        fed unchanged
 *
 * Why this stays exact: the dynamic table is a newest-first window of the
 * insertions, so index j is always the j-th newest insertion whatever the
 * table size. nghttp2's table holds only post-attach insertions; an entry
 * we insert with an empty name is never larger than the real one, so our
 * table evicts no earlier than the real one as long as our maximum size is
 * at least the real one. When it is smaller (attach mid-way under a size
 * update we did not see), j beyond our table is reported unknown too.
 * An empty name means "unknown" downstream: HTTP/2 forbids empty names.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "agent/h2/hpack.h"

#define STATIC_ENTRIES 61

struct h2_hpack {
	nghttp2_hd_inflater *inf;
	uint64_t since_attach; /* insertions seen since (re)attach */
	struct h2_hpack_stats st;
};

static int start(struct h2_hpack *h, bool from_start)
{
	/*
	 * The table's size changes only by size updates in the blocks, which
	 * we see; SETTINGS_HEADER_TABLE_SIZE only bounds them, so allow any
	 * update up to our cap instead of racing the peer's SETTINGS.
	 */
	static const uint8_t midway_update[] = { 0x3f, 0xe1, 0xff, 0x03 };
	nghttp2_nv nv;
	int fl = 0;

	if (h->inf)
		nghttp2_hd_inflate_del(h->inf);
	h->inf = NULL;
	h->since_attach = 0;
	if (nghttp2_hd_inflate_new(&h->inf))
		return -ENOMEM;
	if (nghttp2_hd_inflate_change_table_size(h->inf, H2_HPACK_MAX_TABLE))
		return -EINVAL;
	if (from_start)
		return 0;
	_Static_assert(H2_HPACK_MIDWAY_TABLE == 65536,
		       "midway_update encodes 65536");
	if (nghttp2_hd_inflate_hd2(h->inf, &nv, &fl, midway_update,
				   sizeof(midway_update),
				   1) != sizeof(midway_update) ||
	    !(fl & NGHTTP2_HD_INFLATE_FINAL))
		return -EINVAL;
	nghttp2_hd_inflate_end_headers(h->inf);
	return 0;
}

struct h2_hpack *h2_hpack__new(bool from_start)
{
	struct h2_hpack *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	if (start(h, from_start)) {
		h2_hpack__free(h);
		return NULL;
	}
	return h;
}

void h2_hpack__free(struct h2_hpack *h)
{
	if (!h)
		return;
	if (h->inf)
		nghttp2_hd_inflate_del(h->inf);
	free(h);
}

int h2_hpack__reattach(struct h2_hpack *h)
{
	h->st.reattaches++;
	return start(h, false);
}

void h2_hpack__stats(const struct h2_hpack *h, struct h2_hpack_stats *st)
{
	*st = h->st;
}

/* RFC 7541 §5.1 integer with an N-bit prefix; -1 when truncated/too big. */
static int read_int(const uint8_t **p, const uint8_t *end, int nbits,
		    uint64_t *out)
{
	uint64_t max = (1u << nbits) - 1, v;
	int shift = 0;

	if (*p >= end)
		return -1;
	v = **p & max;
	(*p)++;
	if (v < max) {
		*out = v;
		return 0;
	}
	for (;;) {
		uint8_t b;

		if (*p >= end || shift > 28)
			return -1;
		b = **p;
		(*p)++;
		v += (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			break;
	}
	*out = v;
	return 0;
}

/* RFC 7541 §5.2 string: skip it, keeping where it started. */
static int skip_str(const uint8_t **p, const uint8_t *end)
{
	uint64_t len;

	if (read_int(p, end, 7, &len) || len > (uint64_t)(end - *p))
		return -1;
	*p += len;
	return 0;
}

/* Feed whole representations to nghttp2 and pass on what it emits. */
static int feed(struct h2_hpack *h, const uint8_t *in, size_t len, int final,
		h2_hpack_field_fn fn, void *ctx)
{
	for (;;) {
		nghttp2_nv nv;
		int fl = 0;
		ssize_t n = nghttp2_hd_inflate_hd2(h->inf, &nv, &fl, in, len,
						   final);

		if (n < 0)
			return -EPROTO;
		in += n;
		len -= n;
		if (fl & NGHTTP2_HD_INFLATE_EMIT) {
			h->st.headers++;
			if (nv.namelen == 0) {
				h->st.unknown++;
				fn(ctx, NULL, 0, NULL, 0);
			} else {
				fn(ctx, (const char *)nv.name, nv.namelen,
				   (const char *)nv.value, nv.valuelen);
			}
		}
		if (fl & NGHTTP2_HD_INFLATE_FINAL) {
			nghttp2_hd_inflate_end_headers(h->inf);
			return 0;
		}
		if (!(fl & NGHTTP2_HD_INFLATE_EMIT) && len == 0)
			return 0;
	}
}

/* Is dynamic index idx (> 61) one we can resolve exactly? */
static bool resolvable(struct h2_hpack *h, uint64_t idx)
{
	uint64_t j = idx - STATIC_ENTRIES - 1;

	return j < h->since_attach &&
	       idx <= nghttp2_hd_inflate_get_num_table_entries(h->inf);
}

static void unknown_field(struct h2_hpack *h, h2_hpack_field_fn fn, void *ctx)
{
	h->st.headers++;
	h->st.unknown++;
	fn(ctx, NULL, 0, NULL, 0);
}

int h2_hpack__decode(struct h2_hpack *h, const uint8_t *block, size_t len,
		     h2_hpack_field_fn fn, void *ctx)
{
	const uint8_t *p = block, *end = block + len;
	int err = 0;

	h->st.blocks++;
	while (p < end && !err) {
		const uint8_t *rep = p;
		uint8_t b = *p;
		uint64_t idx;

		if (b & 0x80) { /* §6.1 indexed field */
			if (read_int(&p, end, 7, &idx) || idx == 0) {
				err = -EPROTO;
			} else if (idx > STATIC_ENTRIES &&
				   !resolvable(h, idx)) {
				unknown_field(h, fn, ctx);
			} else {
				err = feed(h, rep, p - rep, 0, fn, ctx);
			}
		} else if ((b & 0xc0) ==
			   0x40) { /* §6.2.1 incremental indexing */
			const uint8_t *val;
			bool known;

			if (read_int(&p, end, 6, &idx) ||
			    (idx == 0 && skip_str(&p, end))) {
				err = -EPROTO;
				break;
			}
			val = p;
			if (skip_str(&p, end)) {
				err = -EPROTO;
				break;
			}
			/* the name index refers to the table before this insertion */
			known = idx <= STATIC_ENTRIES || resolvable(h, idx);
			h->st.inserts++;
			h->since_attach++;
			if (!known) {
				/* keep the insertion, with an empty (unknown) name */
				uint8_t pre[2] = { 0x40, 0x00 };

				err = feed(h, pre, sizeof(pre), 0, fn, ctx);
				if (!err)
					err = feed(h, val, p - val, 0, fn, ctx);
			} else {
				err = feed(h, rep, p - rep, 0, fn, ctx);
			}
		} else if ((b & 0xe0) ==
			   0x20) { /* §6.3 dynamic table size update */
			if (read_int(&p, end, 5, &idx) ||
			    idx > H2_HPACK_MAX_TABLE)
				err = -EPROTO;
			else
				err = feed(h, rep, p - rep, 0, fn, ctx);
		} else { /* §6.2.2/§6.2.3 without indexing, never indexed */
			if (read_int(&p, end, 4, &idx) ||
			    (idx == 0 && skip_str(&p, end)) ||
			    skip_str(&p, end))
				err = -EPROTO;
			else if (idx > STATIC_ENTRIES && !resolvable(h, idx))
				unknown_field(h, fn, ctx);
			else
				err = feed(h, rep, p - rep, 0, fn, ctx);
		}
	}
	if (!err)
		err = feed(h, NULL, 0, 1, fn, ctx);
	if (err) {
		h->st.errors++;
		h2_hpack__reattach(h);
		return -EPROTO;
	}
	return 0;
}
