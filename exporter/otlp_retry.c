// SPDX-License-Identifier: Apache-2.0
/* Retry policy for OTLP/HTTP; see otlp_retry.h. */
#include <ctype.h>
#include <stdlib.h>

#include <curl/curl.h>

#include "exporter/otlp_retry.h"

bool otlp_retry__retryable(long status)
{
	return status == 429 || status == 502 || status == 503 || status == 504;
}

int64_t otlp_retry__after_ms(const char *value, time_t now)
{
	const char *p = value;
	time_t when;

	if (!value)
		return -1;
	while (isspace((unsigned char)*p))
		p++;
	if (isdigit((unsigned char)*p)) {
		char *end;
		unsigned long long sec = strtoull(p, &end, 10);

		while (isspace((unsigned char)*end))
			end++;
		if (*end)
			return -1;
		/* Absurd values are capped by the caller; avoid overflow. */
		if (sec > INT64_MAX / 1000)
			sec = INT64_MAX / 1000;
		return (int64_t)sec * 1000;
	}
	when = curl_getdate(p, NULL);
	if (when == (time_t)-1)
		return -1;
	return when > now ? (int64_t)(when - now) * 1000 : 0;
}

uint64_t otlp_retry__backoff_ms(uint32_t attempt, uint32_t initial_ms,
				uint32_t max_ms, unsigned int *seed)
{
	uint64_t base = initial_ms ? initial_ms : 1;
	uint32_t i;

	for (i = 1; i < attempt && base < max_ms; i++)
		base *= 2;
	if (base > max_ms)
		base = max_ms;
	/*
	 * Half fixed, half random: never retries instantly, and many agents
	 * restarted together by a rollout do not hit the collector in step.
	 */
	return base - (base / 2) + (uint64_t)rand_r(seed) % (base / 2 + 1);
}
