/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny test runner in the manner of tools/testing/selftests/bpf: each test
 * file registers its tests with TEST(name) at load time; ASSERT_* macros
 * record a failure, print where, and return from the test. The runner prints
 * one line per test and closes with "N passed, N failed".
 *
 *   ./bin/unit_tests            run everything
 *   ./bin/unit_tests cel_       run tests whose name contains "cel_"
 *   ./bin/unit_tests -v ...     also print test_log() output of passing tests
 */
#ifndef MM_TEST_H
#define MM_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

struct test_case {
	const char *name;
	void (*fn)(void);
	struct test_case *next;
};

void test__register(struct test_case *tc);
void test__fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
bool test__failed(void);
/* Temporary directory for this test, removed after it passes. */
const char *test__tmpdir(void);

#define TEST(tname)                                                        \
	static void test_##tname(void);                                    \
	static struct test_case tc_##tname = { #tname, test_##tname, NULL }; \
	__attribute__((constructor)) static void reg_##tname(void)         \
	{                                                                  \
		test__register(&tc_##tname);                               \
	}                                                                  \
	static void test_##tname(void)

#define ASSERT_TRUE(cond, ...)                                               \
	do {                                                                 \
		if (!(cond)) {                                               \
			test__fail(__FILE__, __LINE__, "ASSERT_TRUE(" #cond ") " \
				   __VA_ARGS__);                             \
			return;                                              \
		}                                                            \
	} while (0)

#define ASSERT_EQ(a, b)                                                      \
	do {                                                                 \
		long long _a = (long long)(a), _b = (long long)(b);          \
		if (_a != _b) {                                              \
			test__fail(__FILE__, __LINE__,                       \
				   "ASSERT_EQ(%s, %s): %lld != %lld", #a, #b, \
				   _a, _b);                                  \
			return;                                              \
		}                                                            \
	} while (0)

#define ASSERT_STREQ(a, b)                                                   \
	do {                                                                 \
		const char *_a = (a), *_b = (b);                             \
		if (!_a || !_b || strcmp(_a, _b)) {                          \
			test__fail(__FILE__, __LINE__,                       \
				   "ASSERT_STREQ(%s, %s): \"%s\" != \"%s\"", \
				   #a, #b, _a ? _a : "(null)",                \
				   _b ? _b : "(null)");                      \
			return;                                              \
		}                                                            \
	} while (0)

#define ASSERT_NEAR(a, b, eps)                                               \
	do {                                                                 \
		double _a = (a), _b = (b), _e = (eps);                       \
		if (!(_a - _b <= _e && _b - _a <= _e)) {                     \
			test__fail(__FILE__, __LINE__,                       \
				   "ASSERT_NEAR(%s, %s): %.17g vs %.17g", #a, \
				   #b, _a, _b);                              \
			return;                                              \
		}                                                            \
	} while (0)

#define test_log(...) fprintf(stderr, "    " __VA_ARGS__)

#endif /* MM_TEST_H */
