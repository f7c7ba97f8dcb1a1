// SPDX-License-Identifier: Apache-2.0
/* gzip via zlib; see otlp_gzip.h. */
#include <errno.h>
#include <stdlib.h>

#include <zlib.h>

#include "exporter/otlp_gzip.h"

/* windowBits 15 + 16 selects the gzip wrapper instead of zlib's. */
#define GZIP_WBITS (15 + 16)

int otlp_gzip__compress(const void *in, size_t len, void **out, size_t *outlen)
{
	z_stream z = {};
	size_t cap;
	void *buf;
	int ret;

	/* Level 1: metric payloads compress ~10x already; CPU matters more. */
	if (deflateInit2(&z, 1, Z_DEFLATED, GZIP_WBITS, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, len);
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = len;
	z.next_out = buf;
	z.avail_out = cap;
	ret = deflate(&z, Z_FINISH);
	*outlen = z.total_out;
	deflateEnd(&z);
	if (ret != Z_STREAM_END) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	return 0;
}

int otlp_gzip__decompress(const void *in, size_t len, size_t max_out,
			  void **out, size_t *outlen)
{
	z_stream z = {};
	size_t cap = len * 4 + 1024;
	char *buf = NULL, *nb;
	int ret = -EIO, zr;

	if (inflateInit2(&z, GZIP_WBITS) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)in;
	z.avail_in = len;
	for (;;) {
		if (cap > max_out + 1)
			cap = max_out + 1;
		nb = realloc(buf, cap);
		if (!nb) {
			ret = -ENOMEM;
			goto cleanup;
		}
		buf = nb;
		z.next_out = (Bytef *)buf + z.total_out;
		z.avail_out = cap - z.total_out;
		zr = inflate(&z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			break;
		if (zr != Z_OK && zr != Z_BUF_ERROR)
			goto cleanup;
		if (z.total_out > max_out) {
			ret = -EFBIG;
			goto cleanup;
		}
		if (z.avail_out) /* truncated input */
			goto cleanup;
		cap *= 2;
	}
	if (z.total_out > max_out) {
		ret = -EFBIG;
		goto cleanup;
	}
	*out = buf;
	*outlen = z.total_out;
	buf = NULL;
	ret = 0;
cleanup:
	inflateEnd(&z);
	free(buf);
	return ret;
}
