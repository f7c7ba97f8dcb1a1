/* SPDX-License-Identifier: Apache-2.0 */
/*
 * HTTP/2 framing (RFC 9113 §4): cut one direction's ordered byte stream,
 * fed in chunks split anywhere, into frames. Payloads of the frames the
 * decoder needs (HEADERS, CONTINUATION, SETTINGS, RST_STREAM, GOAWAY,
 * PUSH_PROMISE) are gathered whole; DATA and the rest are only counted, so
 * a large body costs no copy. Each frame carries the time stamps of the
 * chunks that held its first and its last byte.
 */
#ifndef MM_AGENT_H2_FRAME_H
#define MM_AGENT_H2_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum h2_frame_type {
	H2_DATA = 0x0,
	H2_HEADERS = 0x1,
	H2_PRIORITY = 0x2,
	H2_RST_STREAM = 0x3,
	H2_SETTINGS = 0x4,
	H2_PUSH_PROMISE = 0x5,
	H2_PING = 0x6,
	H2_GOAWAY = 0x7,
	H2_WINDOW_UPDATE = 0x8,
	H2_CONTINUATION = 0x9,
};

#define H2_F_END_STREAM  0x01
#define H2_F_ACK         0x01
#define H2_F_END_HEADERS 0x04
#define H2_F_PADDED      0x08
#define H2_F_PRIORITY    0x20

#define H2_PREFACE     "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
#define H2_PREFACE_LEN 24
/* A kept payload larger than this is dropped (frame still counted). */
#define H2_KEEP_MAX (1u << 20)

struct h2_frame {
	uint8_t type;
	uint8_t flags;
	uint32_t stream_id;
	uint32_t len;           /* payload length */
	const uint8_t *payload; /* kept types only; NULL when too large */
	uint64_t first_ns;      /* chunk holding the frame's first byte */
	uint64_t last_ns;       /* chunk holding its last byte */
};

typedef void (*h2_frame_fn)(void *ctx, const struct h2_frame *f);

struct h2_framer {
	uint32_t preface_left; /* client direction from the start: 24 */
	bool dead;             /* not HTTP/2 (bad preface): ignore the rest */
	uint8_t hdr[9];
	uint32_t hdr_have;
	uint32_t have; /* payload bytes seen of the current frame */
	uint64_t first_ns;
	uint8_t *buf;
	uint32_t cap;
	bool keep;
	uint64_t frames;
	uint64_t dropped; /* kept-type payloads over H2_KEEP_MAX */
};

void h2_framer__init(struct h2_framer *fr, bool expect_preface);
void h2_framer__release(struct h2_framer *fr);
/* Bytes were lost: the next chunk starts at a frame boundary. */
void h2_framer__resync(struct h2_framer *fr);
/* Returns 0, or -EPROTO once the preface did not match (dead). */
int h2_framer__feed(struct h2_framer *fr, const uint8_t *data, size_t len,
		    uint64_t ts_ns, h2_frame_fn fn, void *ctx);

#endif /* MM_AGENT_H2_FRAME_H */
