// SPDX-License-Identifier: Apache-2.0
/*
 * policy/source/rfc3339.c, the tree's one RFC 3339 parser (HTTPRoute
 * creationTimestamp, CEL timestamp()). Expected epochs from Python's
 * datetime.fromisoformat, not from this code.
 */
#include <errno.h>

#include "policy/source/rfc3339.h"
#include "selftests/unit/test.h"

static int parse(const char *s, int64_t *secs, uint32_t *ns)
{
	return rfc3339__parse(s, strlen(s), secs, ns);
}

TEST(rfc3339_valid)
{
	static const struct {
		const char *s;
		int64_t secs;
		uint32_t ns;
	} ok[] = {
		{ "1970-01-01T00:00:00Z", 0, 0 },
		{ "2009-02-13T23:31:30Z", 1234567890, 0 },
		{ "2024-02-29T12:00:00.5+01:00", 1709204400, 500000000 },
		{ "1969-12-31T23:59:59.999999999Z", -1, 999999999 },
		{ "9999-12-31T23:59:59z", 253402300799, 0 },
		{ "0001-01-01t00:00:00Z", -62135596800, 0 },
	};
	int64_t secs;
	uint32_t ns;

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		if (!ASSERT_EQ(parse(ok[i].s, &secs, &ns), 0))
			continue;
		ASSERT_EQ(secs, ok[i].secs);
		ASSERT_EQ(ns, ok[i].ns);
	}
}

TEST(rfc3339_invalid)
{
	static const char *const bad[] = {
		"2024-02-30T00:00:00Z",  /* no such day */
		"2023-02-29T00:00:00Z",  /* not a leap year */
		"2024-01-01T24:00:00Z",  /* hour */
		"2024-01-01T00:00:60Z",  /* leap second: Go rejects it */
		"2024-01-01 00:00:00Z",  /* space for T */
		"2024-01-01T00:00:00",   /* no offset */
		"2024-01-01T00:00:00.Z", /* empty fraction */
		"2024-01-01T00:00:00.1234567891Z", /* 10 fraction digits */
		"2024-01-01T00:00:00+0100",        /* offset without colon */
		"2024-01-01T00:00:00Zjunk",
		"24-01-01T00:00:00Z",
		"",
	};
	int64_t secs;
	uint32_t ns;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ASSERT_TRUE(parse(bad[i], &secs, &ns) == -EINVAL, "%s", bad[i]);
}
