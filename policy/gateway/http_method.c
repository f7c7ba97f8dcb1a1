// SPDX-License-Identifier: Apache-2.0
/*
 * HTTP method names <-> enum mm_method (bpf/milometer.h), on their own so
 * the manifest parser (gateway_api_route.c), the matcher and explain share
 * them without gateway_api.c and gateway_api_route.c calling each other.
 */
#include <string.h>

#include "bpf/milometer.h"
#include "policy/gateway/http_method.h"

static const char *const method_names[MM_M__COUNT] = {
	[MM_M_OTHER] = "OTHER",     [MM_M_GET] = "GET",
	[MM_M_HEAD] = "HEAD",       [MM_M_POST] = "POST",
	[MM_M_PUT] = "PUT",         [MM_M_DELETE] = "DELETE",
	[MM_M_CONNECT] = "CONNECT", [MM_M_OPTIONS] = "OPTIONS",
	[MM_M_TRACE] = "TRACE",     [MM_M_PATCH] = "PATCH",
};

uint8_t http_method__parse(const char *s, size_t len)
{
	/* Methods are case-sensitive (RFC 9110 9.1). */
	for (int i = MM_M_GET; i < MM_M__COUNT; i++)
		if (strlen(method_names[i]) == len &&
		    !memcmp(method_names[i], s, len))
			return (uint8_t)i;
	return MM_M_OTHER;
}

const char *http_method__name(uint8_t m)
{
	if (m == MM_M_ANY)
		return "any";
	return m < MM_M__COUNT ? method_names[m] : "OTHER";
}
