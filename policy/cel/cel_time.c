// SPDX-License-Identifier: Apache-2.0
/*
 * CEL timestamps and durations: RFC 3339 and Go-style duration parsing and
 * formatting, and the calendar fields behind getFullYear() and friends.
 *
 * Both are int64 nanoseconds (cel.h), so timestamps span 1677-09-21 to
 * 2262-04-11 rather than CEL's 0001-9999; anything outside is a range
 * error, never a wrap. Calendar arithmetic is proleptic Gregorian (Howard
 * Hinnant's days_from_civil, in policy/source/rfc3339.c, the tree's one
 * RFC 3339 parser), which is what RFC 3339 and Go use; no libc
 * time zone state is touched, so this is thread-safe and allocation-free.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/cel/cel_impl.h"
#include "policy/source/rfc3339.h"

#define NS_PER_S 1000000000LL

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	int64_t era;
	unsigned doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = (unsigned)(z - era * 146097);
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static int64_t floor_div(int64_t a, int64_t b)
{
	return a / b - (a % b != 0 && (a < 0) != (b < 0));
}

static bool digits(const char *s, size_t n, int *out)
{
	size_t i;

	*out = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*out = *out * 10 + (s[i] - '0');
	}
	return true;
}

/* "2006-01-02T15:04:05.999999999Z" or with "+07:00"; -EINVAL, -ERANGE. */
int cel_impl__parse_timestamp(const char *s, size_t len, int64_t *ns)
{
	int64_t secs;
	uint32_t frac;
	int err = rfc3339__parse(s, len, &secs, &frac);

	if (err)
		return err;
	if (__builtin_mul_overflow(secs, NS_PER_S, ns) ||
	    __builtin_add_overflow(*ns, (int64_t)frac, ns))
		return -ERANGE;
	return 0;
}

static int64_t unit_ns(const char *u, size_t n)
{
	static const struct {
		const char *name;
		int64_t ns;
	} units[] = {
		{ "ns", 1 },
		{ "us", 1000 },
		{ "\xc2\xb5s", 1000 },
		{ "\xce\xbcs", 1000 },
		{ "ms", 1000000 },
		{ "s", NS_PER_S },
		{ "m", 60 * NS_PER_S },
		{ "h", 3600 * NS_PER_S },
	};
	size_t i;

	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (strlen(units[i].name) == n && !memcmp(units[i].name, u, n))
			return units[i].ns;
	return 0;
}

/* Go's time.ParseDuration syntax: "1h2m3.5s", "-1.5h", "300ms", "0". */
int cel_impl__parse_duration(const char *s, size_t len, int64_t *ns)
{
	size_t p = 0, q;
	uint64_t total = 0;
	bool neg = false;

	if (p < len && (s[p] == '-' || s[p] == '+'))
		neg = s[p++] == '-';
	if (len - p == 1 && s[p] == '0') {
		*ns = 0;
		return 0;
	}
	if (p == len)
		return -EINVAL;
	while (p < len) {
		uint64_t v = 0, scaled;
		double frac = 0, scale = 1;
		bool any = false;
		int64_t unit;

		for (; p < len && s[p] >= '0' && s[p] <= '9'; p++, any = true) {
			if (v > (UINT64_MAX - 9) / 10)
				return -ERANGE;
			v = v * 10 + (s[p] - '0');
		}
		if (p < len && s[p] == '.') {
			for (p++; p < len && s[p] >= '0' && s[p] <= '9';
			     p++, any = true) {
				scale *= 10;
				frac += (s[p] - '0') / scale;
			}
		}
		if (!any)
			return -EINVAL;
		for (q = p;
		     q < len && s[q] != '.' && (s[q] < '0' || s[q] > '9'); q++)
			;
		unit = unit_ns(s + p, q - p);
		if (!unit)
			return -EINVAL;
		p = q;
		if (__builtin_mul_overflow(v, (uint64_t)unit, &scaled) ||
		    __builtin_add_overflow(scaled, (uint64_t)(frac * unit),
					   &scaled) ||
		    __builtin_add_overflow(total, scaled, &total))
			return -ERANGE;
	}
	if (total > (uint64_t)INT64_MAX + neg)
		return -ERANGE;
	*ns = neg ? (int64_t)(0 - total) : (int64_t)total;
	return 0;
}

/* Nine fractional digits without trailing zeros, or nothing. */
static void frac_digits(unsigned nanos, char *buf)
{
	int n = 9;

	buf[0] = 0;
	if (!nanos)
		return;
	snprintf(buf, 12, ".%09u", nanos % 1000000000u);
	while (buf[n] == '0')
		buf[n--] = 0;
}

int cel_impl__fmt_timestamp(int64_t ns, char *buf, size_t len)
{
	int64_t secs = floor_div(ns, NS_PER_S), days = floor_div(secs, 86400);
	int64_t sod = secs - days * 86400, y;
	unsigned m, d;
	char frac[12];

	civil_from_days(days, &y, &m, &d);
	frac_digits((unsigned)(ns - secs * NS_PER_S), frac);
	return snprintf(buf, len, "%04lld-%02u-%02uT%02d:%02d:%02d%sZ",
			(long long)y, m, d, (int)(sod / 3600),
			(int)(sod / 60 % 60), (int)(sod % 60), frac);
}

/* Seconds with the fraction that is there, as cel-go prints: "1.5s". */
int cel_impl__fmt_duration(int64_t ns, char *buf, size_t len)
{
	uint64_t mag = ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns;
	char frac[12];

	frac_digits((unsigned)(mag % NS_PER_S), frac);
	return snprintf(buf, len, "%s%llu%ss", ns < 0 ? "-" : "",
			(unsigned long long)(mag / NS_PER_S), frac);
}

int cel_impl__timestamp_split(int64_t ns, const char *tz, size_t tzlen,
			      struct cel_tm *tm)
{
	int64_t secs = floor_div(ns, NS_PER_S), days, sod;
	int oh, om, off = 0;
	unsigned m, d;

	if (tz && tzlen && !(tzlen == 3 && !memcmp(tz, "UTC", 3))) {
		int sign = 1;

		/* "+hh:mm", "-hh:mm", or "hh:mm" as cel-go also accepts */
		if (tz[0] == '+' || tz[0] == '-') {
			sign = tz[0] == '-' ? -1 : 1;
			tz++;
			tzlen--;
		}
		if (tzlen != 5 || tz[2] != ':' || !digits(tz, 2, &oh) ||
		    !digits(tz + 3, 2, &om) || oh > 23 || om > 59)
			return -EINVAL;
		off = sign * (oh * 3600 + om * 60);
	}
	tm->ms = (int)((ns - secs * NS_PER_S) / 1000000);
	secs += off;
	days = floor_div(secs, 86400);
	sod = secs - days * 86400;
	civil_from_days(days, &tm->year, &m, &d);
	tm->month = m - 1;
	tm->mday = d - 1;
	tm->yday = (int)(days - rfc3339__days_from_civil(tm->year, 1, 1));
	tm->wday = (int)(((days % 7) + 11) % 7); /* 1970-01-01 was a Thursday */
	tm->hour = (int)(sod / 3600);
	tm->min = (int)(sod / 60 % 60);
	tm->sec = (int)(sod % 60);
	return 0;
}
