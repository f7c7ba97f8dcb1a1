/* SPDX-License-Identifier: Apache-2.0 */
/* gzip (RFC 1952) bodies for OTLP/HTTP Content-Encoding: gzip. */
#ifndef MM_EXPORTER_OTLP_GZIP_H
#define MM_EXPORTER_OTLP_GZIP_H

#include <stddef.h>

/* *out is malloc()ed. Return 0 or -ENOMEM/-EIO. */
int otlp_gzip__compress(const void *in, size_t len, void **out, size_t *outlen);
/* Refuses to inflate past max_out bytes (-EFBIG): bodies come from peers. */
int otlp_gzip__decompress(const void *in, size_t len, size_t max_out,
			  void **out, size_t *outlen);

#endif /* MM_EXPORTER_OTLP_GZIP_H */
