/* SPDX-License-Identifier: Apache-2.0 */
/* The POST URL for an OTLP/HTTP metrics endpoint, as OTel SDKs derive it. */
#ifndef MM_EXPORTER_OTLP_ENDPOINT_H
#define MM_EXPORTER_OTLP_ENDPOINT_H

#include <stdbool.h>
#include <stddef.h>

/*
 * endpoint: http(s)://host[:port][/path]. "/v1/metrics" is appended to the
 * path unless it already ends in it or exact is set. NULL endpoint:
 * $OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (exact), else
 * $OTEL_EXPORTER_OTLP_ENDPOINT. Only http and https, a host, and no
 * user:password@ (the URL gets logged). *url is malloc()ed. Returns 0, or
 * -EINVAL with a message saying what to write instead, or -ENOMEM.
 */
int otlp_endpoint__resolve(const char *endpoint, bool exact, char **url,
			   char *err, size_t errlen);

#endif /* MM_EXPORTER_OTLP_ENDPOINT_H */
