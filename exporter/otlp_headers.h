/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Extra HTTP headers for OTLP export (usually credentials), in the
 * OTEL_EXPORTER_OTLP_HEADERS format: "k1=v1,k2=v2", values percent-decoded,
 * blanks around keys and values ignored. Values are secrets: nothing here or
 * in the sender ever prints them, and redact() scrubs them from debug text.
 */
#ifndef MM_EXPORTER_OTLP_HEADERS_H
#define MM_EXPORTER_OTLP_HEADERS_H

#include <stddef.h>

struct otlp_headers {
	char **lines;    /* "Name: value", ready for CURLOPT_HTTPHEADER */
	size_t *namelen; /* length of Name in lines[i] */
	size_t n;
};

/*
 * Parse spec and append its headers to h (zero-initialised on first use).
 * origin names where spec came from for error messages (e.g. the env var).
 * Returns 0 or -EINVAL with a message that names the bad key but never
 * shows a value.
 */
int otlp_headers__parse(struct otlp_headers *h, const char *spec,
			const char *origin, char *err, size_t errlen);
void otlp_headers__free(struct otlp_headers *h);

/*
 * Copy text (len bytes, lines ending in \n or \r\n) to out, replacing the
 * value of each line "Name: value" whose Name is one of h's or
 * Authorization/Proxy-Authorization by "[redacted]". out is always
 * NUL-terminated; returns its length.
 */
size_t otlp_headers__redact(const struct otlp_headers *h, const char *text,
			    size_t len, char *out, size_t outlen);

#endif /* MM_EXPORTER_OTLP_HEADERS_H */
