// SPDX-License-Identifier: Apache-2.0
/* RFC 3339 date-time parsing: see rfc3339.h. */
#include <errno.h>
#include <stdbool.h>

#include "policy/source/rfc3339.h"

int64_t rfc3339__days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era;
	unsigned yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = (unsigned)(y - era * 400);
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static bool digits(const char *s, size_t n, int *out)
{
	*out = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*out = *out * 10 + (s[i] - '0');
	}
	return true;
}

static int mdays(int y, int m)
{
	static const int d[] = {
		31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31
	};
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;

	return m == 2 && leap ? 29 : d[m - 1];
}

int rfc3339__parse(const char *s, size_t len, int64_t *secs, uint32_t *nanos)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0, i;
	uint32_t frac = 0, scale = 1000000000;
	size_t p = 19;

	if (len < 20 || s[4] != '-' || s[7] != '-' ||
	    (s[10] != 'T' && s[10] != 't') || s[13] != ':' || s[16] != ':' ||
	    !digits(s, 4, &y) || !digits(s + 5, 2, &mo) ||
	    !digits(s + 8, 2, &d) || !digits(s + 11, 2, &h) ||
	    !digits(s + 14, 2, &mi) || !digits(s + 17, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays(y, mo) || h > 23 ||
	    mi > 59 || sec > 59)
		return -EINVAL;
	if (s[p] == '.') {
		for (p++, i = 0; p < len && s[p] >= '0' && s[p] <= '9';
		     p++, i++) {
			if (i >= 9)
				return -EINVAL;
			scale /= 10;
			frac += (uint32_t)(s[p] - '0') * scale;
		}
		if (!i)
			return -EINVAL;
	}
	if (p + 1 == len && (s[p] == 'Z' || s[p] == 'z')) {
		sign = 0;
	} else if (p + 6 == len && (s[p] == '+' || s[p] == '-') &&
		   s[p + 3] == ':' && digits(s + p + 1, 2, &oh) &&
		   digits(s + p + 4, 2, &om) && oh < 24 && om < 60) {
		sign = s[p] == '-' ? -1 : 1;
	} else {
		return -EINVAL;
	}
	*secs = rfc3339__days_from_civil(y, mo, d) * 86400 + h * 3600 +
		mi * 60 + sec - sign * (oh * 3600 + om * 60);
	*nanos = frac;
	return 0;
}
