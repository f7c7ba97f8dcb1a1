/* SPDX-License-Identifier: Apache-2.0 */
/* HTTPMethod <-> enum mm_method (bpf/milometer.h). */
#ifndef MM_POLICY_GATEWAY_HTTP_METHOD_H
#define MM_POLICY_GATEWAY_HTTP_METHOD_H

#include <stddef.h>
#include <stdint.h>

/* Case-sensitive (RFC 9110 9.1); MM_M_OTHER for anything unknown. */
uint8_t http_method__parse(const char *s, size_t len);
/* "any" for MM_M_ANY, "OTHER" past the table. */
const char *http_method__name(uint8_t m);

#endif /* MM_POLICY_GATEWAY_HTTP_METHOD_H */
