/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A tiny test runner in the manner of tools/testing/selftests/bpf: each test
 * file registers its tests with TEST(name) at load time. ASSERT_* are
 * expressions, as in the kernel's test_progs.h: they record a failure (and
 * print where) and evaluate to whether the assertion held, so a test can
 * write `if (!ASSERT_TRUE(p)) goto cleanup;`. Used as a statement, an
 * assertion that fails lets the test go on: every test runs in its own
 * child process, so a crash after a failed assertion fails that test only
 * (with the signal's name) and the runner goes on with the next one.
 * A test that cannot run says so with SKIP(): it is reported and counted
 * as skipped, never as passed.
 *
 *   ./bin/unit_tests            run everything
 *   ./bin/unit_tests cel_       run tests whose name contains "cel_"
 *   ./bin/unit_tests -v ...     also print the output of passing tests
 *
 * One line per test ("ok", "FAIL" or "SKIP"), then "N passed, N failed,
 * N skipped"; exit status 1 when any failed.
 */
#ifndef MM_TEST_H
#define MM_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

struct test_case {
	const char *name;
	void (*fn)(void);
	struct test_case *next;
};

void test__register(struct test_case *tc);
void test__fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void test__skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
bool test__failed(void);
/* Temporary directory for this test, removed after it passes. */
const char *test__tmpdir(void);
/* CLOCK_MONOTONIC milliseconds: deadlines for polled conditions. */
long long test__now_ms(void);

#define TEST(tname)                                                        \
	static void test_##tname(void);                                    \
	static struct test_case tc_##tname = { #tname, test_##tname, NULL }; \
	__attribute__((constructor)) static void reg_##tname(void)         \
	{                                                                  \
		test__register(&tc_##tname);                               \
	}                                                                  \
	static void test_##tname(void)

/* Report the test as skipped with the reason, and leave it. */
#define SKIP(...)                                                            \
	do {                                                                 \
		test__skip(__VA_ARGS__);                                     \
		return;                                                      \
	} while (0)

#define ASSERT_TRUE(cond, ...)                                               \
	({                                                                   \
		bool ___ok = !!(cond);                                       \
		if (!___ok)                                                  \
			test__fail(__FILE__, __LINE__, "ASSERT_TRUE(" #cond ") " \
				   __VA_ARGS__);                             \
		___ok;                                                       \
	})

#define ASSERT_EQ(a, b)                                                      \
	({                                                                   \
		long long ___a = (long long)(a), ___b = (long long)(b);      \
		bool ___ok = ___a == ___b;                                   \
		if (!___ok)                                                  \
			test__fail(__FILE__, __LINE__,                       \
				   "ASSERT_EQ(%s, %s): %lld != %lld", #a, #b, \
				   ___a, ___b);                              \
		___ok;                                                       \
	})

#define ASSERT_STREQ(a, b)                                                   \
	({                                                                   \
		const char *___a = (a), *___b = (b);                         \
		bool ___ok = ___a && ___b && !strcmp(___a, ___b);            \
		if (!___ok)                                                  \
			test__fail(__FILE__, __LINE__,                       \
				   "ASSERT_STREQ(%s, %s): \"%s\" != \"%s\"", \
				   #a, #b, ___a ? ___a : "(null)",            \
				   ___b ? ___b : "(null)");                  \
		___ok;                                                       \
	})

#define ASSERT_NEAR(a, b, eps)                                               \
	({                                                                   \
		double ___a = (a), ___b = (b), ___e = (eps);                 \
		bool ___ok = ___a - ___b <= ___e && ___b - ___a <= ___e;     \
		if (!___ok)                                                  \
			test__fail(__FILE__, __LINE__,                       \
				   "ASSERT_NEAR(%s, %s): %.17g vs %.17g", #a, \
				   #b, ___a, ___b);                          \
		___ok;                                                       \
	})

/*
 * Poll cond until it holds or timeout_ms passed: the synchronisation for
 * anything a thread or another process does (never a sleep). Evaluates to
 * whether cond held in time.
 */
#define WAIT_FOR(cond, timeout_ms)                                           \
	({                                                                   \
		long long ___end = test__now_ms() + (timeout_ms);            \
		bool ___ok;                                                  \
		while (!(___ok = !!(cond)) && test__now_ms() < ___end) {     \
			struct timespec ___ts = { 0, 1000000 };              \
			nanosleep(&___ts, NULL);                             \
		}                                                            \
		___ok;                                                       \
	})

/* Test output: shown when the test fails, or always with -v. */
#define test_log(...) fprintf(stderr, "    " __VA_ARGS__)

#endif /* MM_TEST_H */
