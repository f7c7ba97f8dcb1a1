/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HPACK (RFC 7541) header-block decoding for one direction of one HTTP/2
 * connection, safe to start mid-connection. Debian's libnghttp2 does the
 * decoding proper (Huffman, static and dynamic tables); this file reads each
 * representation's prefix first and counts dynamic-table insertions since
 * it attached. HPACK indexes count newest-first, so a reference to dynamic
 * index j names the j-th newest insertion: when j is below the insertions
 * seen since attach it resolves exactly; otherwise the entry predates us
 * and the header is reported unknown (name NULL) — never another header's
 * value. After a lost header block the counting starts again (reattach).
 */
#ifndef MM_AGENT_H2_HPACK_H
#define MM_AGENT_H2_HPACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Table size assumed when attaching mid-connection (larger is safe). */
#define H2_HPACK_MIDWAY_TABLE 65536
/* Larger size updates are refused (memory bound per connection). */
#define H2_HPACK_MAX_TABLE (1u << 20)

struct h2_hpack;

struct h2_hpack_stats {
	uint64_t blocks;     /* header blocks decoded */
	uint64_t headers;    /* header fields emitted, unknown included */
	uint64_t inserts;    /* dynamic-table insertions seen */
	uint64_t unknown;    /* fields that referenced a pre-attach entry */
	uint64_t errors;     /* malformed blocks (each forces a reattach) */
	uint64_t reattaches; /* restarts of the insertion count */
};

/*
 * name == NULL: a field whose name and value predate attach (unknown). A
 * field whose name is known but whose value is not does not occur: values
 * are literal or come with their name.
 */
typedef void (*h2_hpack_field_fn)(void *ctx, const char *name, size_t nlen,
				  const char *value, size_t vlen);

/* from_start: the connection's first header block will be seen. */
struct h2_hpack *h2_hpack__new(bool from_start);
void h2_hpack__free(struct h2_hpack *h);
/* A header block of this direction was lost: count insertions afresh. */
int h2_hpack__reattach(struct h2_hpack *h);
/*
 * Decode one complete header block (HEADERS + CONTINUATION fragments
 * joined). Returns 0, or -EPROTO for a malformed block (the fields emitted
 * before the error stand; the decoder has reattached).
 */
int h2_hpack__decode(struct h2_hpack *h, const uint8_t *block, size_t len,
		     h2_hpack_field_fn fn, void *ctx);
void h2_hpack__stats(const struct h2_hpack *h, struct h2_hpack_stats *st);

#endif /* MM_AGENT_H2_HPACK_H */
