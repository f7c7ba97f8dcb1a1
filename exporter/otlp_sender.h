/* SPDX-License-Identifier: Apache-2.0 */
/*
 * OTLP/HTTP exporter transport: POST {endpoint}/v1/metrics with
 * Content-Type application/x-protobuf from its own thread, so a slow or dead
 * collector never blocks the agent's capture or collection.
 *
 * Per the OTLP/HTTP spec: 429/502/503/504 and transport failures are retried
 * (Retry-After honoured, seconds or HTTP-date; otherwise exponential backoff
 * with jitter) while the batch stays in a byte-bounded queue whose oldest
 * batches are dropped when full; other 4xx/5xx are not retried; a 2xx whose
 * partial_success rejects points is counted and logged, not retried.
 * Header values (credentials) are never logged.
 */
#ifndef MM_EXPORTER_OTLP_SENDER_H
#define MM_EXPORTER_OTLP_SENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "exporter/otlp_log.h"

struct otlp_sender_opts {
	/*
	 * http://host:port or https://host:port, optionally with a path;
	 * "/v1/metrics" is appended unless the path already ends in it or
	 * endpoint_exact is set. NULL: $OTEL_EXPORTER_OTLP_METRICS_ENDPOINT
	 * (used as is), else $OTEL_EXPORTER_OTLP_ENDPOINT (appended to), as
	 * the OTel SDKs do.
	 */
	const char *endpoint;
	bool endpoint_exact;
	/*
	 * Extra headers "k1=v1,k2=v2" (values %-encoded). NULL: taken from
	 * $OTEL_EXPORTER_OTLP_METRICS_HEADERS, else $OTEL_EXPORTER_OTLP_HEADERS
	 * (unless no_env_headers).
	 */
	const char *headers;
	bool no_env_headers;
	const char *ca_file;     /* CA bundle for https (CURLOPT_CAINFO) */
	const char *client_cert; /* optional mTLS, PEM */
	const char *client_key;
	bool gzip;                   /* Content-Encoding: gzip */
	size_t queue_max_bytes;      /* 0: 16 MiB */
	uint32_t connect_timeout_ms; /* 0: 5 s */
	uint32_t timeout_ms;         /* whole request; 0: 10 s */
	uint32_t backoff_initial_ms; /* 0: 1 s */
	uint32_t backoff_max_ms;     /* 0: 30 s */
	/* cap on a server's Retry-After; 0: 5 min */
	uint32_t retry_after_max_ms;
	bool debug;      /* curl's trace to the log, headers redacted */
	otlp_log_fn log; /* NULL: stderr */
	void *log_ctx;
};

struct otlp_sender_stats {
	uint64_t attempts;          /* HTTP requests tried */
	uint64_t successes;         /* batches delivered (2xx) */
	uint64_t failures;          /* batches given up on (not retryable) */
	uint64_t retries;           /* attempts that failed and were retried */
	uint64_t partial_successes; /* 2xx with rejected points */
	uint64_t rejected_points;   /* sum of rejected_data_points */
	uint64_t dropped_batches;   /* queue full, too big, or left at stop */
	uint64_t dropped_bytes;
	uint64_t queue_batches; /* now waiting, including in flight */
	uint64_t queue_bytes;
	uint64_t sent_bytes;  /* request bodies delivered, as on the wire */
	uint64_t connections; /* opened; stays low while reused */
	long last_status;     /* last HTTP status; 0: transport error */
};

struct otlp_sender;

/* Validates the options and starts the thread; NULL with err set on error. */
struct otlp_sender *otlp_sender__start(const struct otlp_sender_opts *o,
				       char *err, size_t errlen);

/*
 * Queue one encoded ExportMetricsServiceRequest; takes ownership of buf
 * (malloc()ed) whatever the result. Never blocks on the network. Returns 0,
 * -EMSGSIZE (bigger than the whole queue: dropped), -ESHUTDOWN or -ENOMEM.
 */
int otlp_sender__enqueue(struct otlp_sender *s, void *buf, size_t len);
/*
 * As otlp_sender__enqueue, with one more request header for this batch
 * alone ("X-Scope-OrgID: tenant": a request per tenant); copied.
 */
int otlp_sender__enqueue_with(struct otlp_sender *s, void *buf, size_t len,
			      const char *header);

void otlp_sender__stats(struct otlp_sender *s, struct otlp_sender_stats *st);

/*
 * Send what is queued for up to flush_timeout_ms (0: not at all), aborting
 * a request still running then, stop the thread and free everything.
 * Batches left unsent are counted as dropped.
 */
void otlp_sender__stop(struct otlp_sender *s, int flush_timeout_ms);

/*
 * An otlp_emit_fn (otlp_encode.h) that enqueues on the sender given as ctx:
 *   otlp_encode__store_split(enc, store, now, 5000, otlp_sender__emit, snd);
 * A batch refused for size is counted and skipped; only a stopped sender
 * ends the split.
 */
int otlp_sender__emit(void *sender, void *buf, size_t len, size_t npoints);

/* The resolved POST URL, e.g. for the agent's startup log line. */
const char *otlp_sender__url(const struct otlp_sender *s);

#endif /* MM_EXPORTER_OTLP_SENDER_H */
