/* SPDX-License-Identifier: Apache-2.0 */
/*
 * RFC 3339 date-time (section 5.6), the one parser of the tree: Kubernetes
 * timestamps (metadata.creationTimestamp, condition lastTransitionTime) and
 * CEL's timestamp(). "2006-01-02T15:04:05.999999999Z" or with "+07:00";
 * 'T' and 'Z' in either case; at most 9 fraction digits; no leap second
 * (as Go's time.Parse, which the API server and CEL use). Calendar
 * arithmetic is proleptic Gregorian and touches no libc time zone state.
 */
#ifndef MM_POLICY_SOURCE_RFC3339_H
#define MM_POLICY_SOURCE_RFC3339_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse len bytes of s: seconds since the epoch (UTC) and the fraction in
 * nanoseconds. -EINVAL when s is not an RFC 3339 date-time.
 */
int rfc3339__parse(const char *s, size_t len, int64_t *secs, uint32_t *nanos);
/* Days from 1970-01-01 to y-m-d (Howard Hinnant's days_from_civil). */
int64_t rfc3339__days_from_civil(int64_t y, unsigned m, unsigned d);

#endif /* MM_POLICY_SOURCE_RFC3339_H */
