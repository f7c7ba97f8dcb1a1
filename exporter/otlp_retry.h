/* SPDX-License-Identifier: Apache-2.0 */
/* When and whether to retry an OTLP/HTTP export (OTLP spec, "Retryable
 * Response Codes" and "Throttling"). */
#ifndef MM_EXPORTER_OTLP_RETRY_H
#define MM_EXPORTER_OTLP_RETRY_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* 429, 502, 503, 504: the only statuses a client may retry. */
bool otlp_retry__retryable(long status);

/*
 * A Retry-After value, delta-seconds or HTTP-date, as a delay in ms from
 * now (wall clock, seconds). Returns -1 when it is neither; a date in the
 * past gives 0.
 */
int64_t otlp_retry__after_ms(const char *value, time_t now);

/*
 * Exponential backoff with "equal jitter": attempt 1 waits
 * [initial/2, initial], each next attempt doubles, capped at max_ms.
 */
uint64_t otlp_retry__backoff_ms(uint32_t attempt, uint32_t initial_ms,
				uint32_t max_ms, unsigned int *seed);

#endif /* MM_EXPORTER_OTLP_RETRY_H */
