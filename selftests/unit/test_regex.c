// SPDX-License-Identifier: Apache-2.0
/* policy/regex: RE2 syntax, linear-time matching, bounded compilation. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "policy/regex/regex.h"
#include "selftests/unit/test.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static struct regex *compile(const char *pat, int *rc, char *err, size_t errlen)
{
	struct regex *re = NULL;

	*rc = regex__compile(pat, strlen(pat), &re, err, errlen);
	return re;
}

TEST(regex_re2_syntax_full_and_partial)
{
	char err[256];
	int rc;
	struct regex *re = compile("/v\\d+/(?i:items)", &rc, err, sizeof(err));

	ASSERT_EQ(rc, 0);
	ASSERT_TRUE(regex__full(re, "/v12/ITEMS", 10));
	ASSERT_TRUE(!regex__full(re, "/v12/items/x", 12));
	ASSERT_TRUE(regex__partial(re, "x/v1/itemsy", 11));
	ASSERT_TRUE(!regex__partial(re, "/vx/items", 9));
	/* a counted subject: a NUL byte is data, not the end */
	ASSERT_TRUE(!regex__full(re, "/v1/items\0x", 11));
	regex__free(re);

	re = compile("a\\x00b", &rc, err, sizeof(err));
	ASSERT_EQ(rc, 0);
	ASSERT_TRUE(regex__full(re, "a\0b", 3));
	regex__free(re);

	re = compile("/(a", &rc, err, sizeof(err));
	ASSERT_TRUE(!re && rc == -EINVAL && strstr(err, "missing )"), "%s",
		    err);
	/* backreferences are not RE2 (they need backtracking) */
	re = compile("(a)\\1", &rc, err, sizeof(err));
	ASSERT_TRUE(!re && rc == -EINVAL, "%s", err);
}

TEST(regex_limits)
{
	char err[256], *big = malloc(REGEX_MAX_PATTERN + 2);
	int rc;
	struct regex *re;
	double t0 = now_ms();

	ASSERT_TRUE(big);
	/* 554 MB and over 30 s per match with POSIX regcomp */
	re = compile("/(.{0,255}){0,255}", &rc, err, sizeof(err));
	ASSERT_TRUE(!re && rc == -E2BIG &&
			    strstr(err, "invalid repetition size"),
		    "%d %s", rc, err);
	re = compile(".{0,1000}", &rc, err, sizeof(err));
	ASSERT_TRUE(!re && rc == -E2BIG && strstr(err, "instructions"), "%d %s",
		    rc, err);
	memset(big, 'a', REGEX_MAX_PATTERN + 1);
	big[REGEX_MAX_PATTERN + 1] = 0;
	re = compile(big, &rc, err, sizeof(err));
	ASSERT_TRUE(!re && rc == -E2BIG && strstr(err, "more than the limit"),
		    "%d %s", rc, err);
	big[REGEX_MAX_PATTERN] = 0; /* exactly at the limit: fine */
	re = compile(big, &rc, err, sizeof(err));
	ASSERT_TRUE(re, "%d %s", rc, err);
	regex__free(re);
	free(big);
	ASSERT_TRUE(now_ms() - t0 < 2000, "compiling took %.0f ms",
		    now_ms() - t0);
}

TEST(regex_match_time_is_linear)
{
	size_t n = 1 << 20;
	char err[256], *s = malloc(n);
	int rc;
	/* exponential for a backtracking matcher on "xxxx...x" */
	struct regex *re = compile("(x+x+)+y", &rc, err, sizeof(err));
	double t0;

	ASSERT_TRUE(re && s, "%s", err);
	memset(s, 'x', n);
	t0 = now_ms();
	ASSERT_TRUE(!regex__full(re, s, n));
	ASSERT_TRUE(!regex__partial(re, s, n));
	test_log("1 MiB subject, (x+x+)+y: %.1f ms\n", now_ms() - t0);
	ASSERT_TRUE(now_ms() - t0 < 2000, "%.0f ms", now_ms() - t0);
	regex__free(re);
	free(s);
}
