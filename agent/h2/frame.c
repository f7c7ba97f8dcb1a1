// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "agent/h2/frame.h"

void h2_framer__init(struct h2_framer *fr, bool expect_preface)
{
	memset(fr, 0, sizeof(*fr));
	fr->preface_left = expect_preface ? H2_PREFACE_LEN : 0;
}

void h2_framer__release(struct h2_framer *fr)
{
	free(fr->buf);
	fr->buf = NULL;
	fr->cap = 0;
}

void h2_framer__resync(struct h2_framer *fr)
{
	fr->hdr_have = 0;
	fr->have = 0;
	fr->keep = false;
	fr->preface_left = 0;
}

static bool kept(uint8_t type)
{
	switch (type) {
	case H2_HEADERS:
	case H2_CONTINUATION:
	case H2_SETTINGS:
	case H2_RST_STREAM:
	case H2_GOAWAY:
	case H2_PUSH_PROMISE:
		return true;
	}
	return false;
}

static uint32_t frame_len(const struct h2_framer *fr)
{
	return (uint32_t)fr->hdr[0] << 16 | (uint32_t)fr->hdr[1] << 8 |
	       fr->hdr[2];
}

static void emit(struct h2_framer *fr, uint64_t ts, h2_frame_fn fn, void *ctx)
{
	struct h2_frame f = {
		.type = fr->hdr[3],
		.flags = fr->hdr[4],
		.stream_id = ((uint32_t)fr->hdr[5] << 24 |
			      (uint32_t)fr->hdr[6] << 16 |
			      (uint32_t)fr->hdr[7] << 8 | fr->hdr[8]) &
			     0x7fffffff,
		.len = frame_len(fr),
		/* an empty kept frame (SETTINGS ack) has a payload, of 0 bytes */
		.payload = !fr->keep ? NULL
			   : fr->buf ? fr->buf
				     : (const uint8_t *)"",
		.first_ns = fr->first_ns,
		.last_ns = ts,
	};

	if (kept(f.type) && !fr->keep)
		fr->dropped++;
	fr->frames++;
	fr->hdr_have = 0;
	fr->have = 0;
	fr->keep = false;
	fn(ctx, &f);
}

int h2_framer__feed(struct h2_framer *fr, const uint8_t *p, size_t len,
		    uint64_t ts, h2_frame_fn fn, void *ctx)
{
	const uint8_t *end = p + len;

	if (fr->dead)
		return -EPROTO;
	while (p < end) {
		if (fr->preface_left) {
			size_t off = H2_PREFACE_LEN - fr->preface_left;
			size_t n = end - p < fr->preface_left
					   ? (size_t)(end - p)
					   : fr->preface_left;

			if (memcmp(p, &H2_PREFACE[off], n)) {
				fr->dead = true;
				return -EPROTO;
			}
			fr->preface_left -= n;
			p += n;
			continue;
		}
		if (fr->hdr_have < 9) {
			size_t n = 9 - fr->hdr_have;

			if (n > (size_t)(end - p))
				n = end - p;
			if (fr->hdr_have == 0)
				fr->first_ns = ts;
			memcpy(fr->hdr + fr->hdr_have, p, n);
			fr->hdr_have += n;
			p += n;
			if (fr->hdr_have < 9)
				break;
			fr->keep = kept(fr->hdr[3]) &&
				   frame_len(fr) <= H2_KEEP_MAX;
			if (fr->keep && frame_len(fr) > fr->cap) {
				uint32_t cap = frame_len(fr) < 4096
						       ? 4096
						       : frame_len(fr);
				uint8_t *nb = realloc(fr->buf, cap);

				if (nb) {
					fr->buf = nb;
					fr->cap = cap;
				} else {
					fr->keep = false;
				}
			}
		}
		{
			uint32_t want = frame_len(fr) - fr->have;
			size_t n = want < (size_t)(end - p) ? want
							    : (size_t)(end - p);

			if (fr->keep && n)
				memcpy(fr->buf + fr->have, p, n);
			fr->have += n;
			p += n;
			if (fr->have == frame_len(fr))
				emit(fr, ts, fn, ctx);
		}
	}
	return 0;
}
