/* SPDX-License-Identifier: Apache-2.0 */
/*
 * One OTLP/HTTP export request at a time over a reused curl handle: POST,
 * classify the answer per the OTLP/HTTP spec, read Retry-After and
 * partial_success. The retry timing and the queue are the sender's.
 */
#ifndef MM_EXPORTER_OTLP_HTTP_H
#define MM_EXPORTER_OTLP_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "exporter/otlp_log.h"
#include "exporter/otlp_sender.h"

enum otlp_http_outcome {
	OTLP_HTTP_SENT,    /* 2xx */
	OTLP_HTTP_RETRY,   /* 429/502/503/504 or a transport failure */
	OTLP_HTTP_GIVE_UP, /* any other answer: the batch cannot succeed */
	OTLP_HTTP_ABORTED, /* *abort_at_ns passed while in flight */
};

struct otlp_http_result {
	enum otlp_http_outcome outcome;
	long status;            /* HTTP status; 0: no answer */
	long connects;          /* connections this request opened */
	int64_t retry_after_ms; /* server's Retry-After; -1: none */
	int64_t rejected;       /* partial_success: points; -1: message only */
};

struct otlp_http;

/*
 * o is the sender's, with its defaults applied; url from
 * otlp_endpoint__resolve(). Parses the extra headers (o->headers, or the
 * OTEL_EXPORTER_OTLP_[METRICS_]HEADERS variables). NULL with err set.
 */
struct otlp_http *otlp_http__new(const struct otlp_sender_opts *o,
				 const char *url, const struct otlp_logger *log,
				 char *err, size_t errlen);
void otlp_http__free(struct otlp_http *h);

/* Blocks for at most the request timeout, or until *abort_at_ns (CLOCK_
 * MONOTONIC ns, read atomically; 0: none) has passed. */
void otlp_http__post(struct otlp_http *h, const void *body, size_t len,
		     const char *header, const uint64_t *abort_at_ns,
		     struct otlp_http_result *r);

const char *otlp_http__url(const struct otlp_http *h);

#endif /* MM_EXPORTER_OTLP_HTTP_H */
