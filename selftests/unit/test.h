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
 * A test may hold subtests (test_progs' test__start_subtest()): each is
 * reported on its own line, "ok   test/subtest" or "FAIL test/subtest",
 * before its test's line; a test fails when any of its subtests failed.
 *
 *   ./bin/unit_tests              run everything
 *   ./bin/unit_tests cel_         run tests whose name contains "cel_"
 *   ./bin/unit_tests 'route_*'    a glob (*, ?, [...]) matches the whole name
 *   ./bin/unit_tests 'a/sub*'     only the subtests of a that match sub*
 *   ./bin/unit_tests -v ...       also print the output of passing tests
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

#include "policy/util/log.h"

static inline void test__log_line(void *f, int level, const char *line)
{
	(void)level;
	fputs(line, f);
}

/*
 * The logger's lines into f, the error stream a command under test was
 * given (its usage errors are logged); NULL: stderr again.
 */
static inline void test_log_to(FILE *f)
{
	log__set_sink(f ? test__log_line : NULL, f);
}

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
/*
 * Start subtest NAME of the running test: false when the name filter leaves
 * it out (skip its body). The previous subtest, if any, is reported first.
 */
bool test__start_subtest(const char *name);

#define TEST(tname)                                                            \
	static void test_##tname(void);                                        \
	static struct test_case tc_##tname = { #tname, test_##tname, NULL };   \
	__attribute__((constructor)) static void reg_##tname(void)             \
	{                                                                      \
		test__register(&tc_##tname);                                   \
	}                                                                      \
	static void test_##tname(void)

/* Report the test as skipped with the reason, and leave it. */
#define SKIP(...)                                                              \
	do {                                                                   \
		test__skip(__VA_ARGS__);                                       \
		return;                                                        \
	} while (0)

#define ASSERT_TRUE(cond, ...)                                                 \
	({                                                                     \
		bool ___ok = !!(cond);                                         \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   "ASSERT_TRUE(" #cond ") " __VA_ARGS__);     \
		___ok;                                                         \
	})

/*
 * Comparisons print both expressions and both values when they fail
 * (signed 64-bit: what every caller compares fits; pointers use _PTR).
 */
#define ___ASSERT_CMP(name, a, op, b)                                          \
	({                                                                     \
		long long ___a = (long long)(a), ___b = (long long)(b);        \
		bool ___ok = ___a op ___b;                                     \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   name "(%s, %s): %lld " #op                  \
					" %lld is false",                      \
				   #a, #b, ___a, ___b);                        \
		___ok;                                                         \
	})
#define ASSERT_EQ(a, b) ___ASSERT_CMP("ASSERT_EQ", a, ==, b)
#define ASSERT_NE(a, b) ___ASSERT_CMP("ASSERT_NE", a, !=, b)
#define ASSERT_LT(a, b) ___ASSERT_CMP("ASSERT_LT", a, <, b)
#define ASSERT_LE(a, b) ___ASSERT_CMP("ASSERT_LE", a, <=, b)
#define ASSERT_GT(a, b) ___ASSERT_CMP("ASSERT_GT", a, >, b)
#define ASSERT_GE(a, b) ___ASSERT_CMP("ASSERT_GE", a, >=, b)

/* err == 0 (a 0 / -errno return); a negative one is printed as errno */
#define ASSERT_OK(err)                                                         \
	({                                                                     \
		long long ___e = (long long)(err);                             \
		bool ___ok = ___e == 0;                                        \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   "ASSERT_OK(%s): %lld (%s)", #err, ___e,     \
				   ___e < 0 ? strerror((int)-___e) : "not 0"); \
		___ok;                                                         \
	})

/* err < 0: the call was refused */
#define ASSERT_ERR(err)                                                        \
	({                                                                     \
		long long ___e = (long long)(err);                             \
		bool ___ok = ___e < 0;                                         \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   "ASSERT_ERR(%s): %lld is not an error",     \
				   #err, ___e);                                \
		___ok;                                                         \
	})

#define ASSERT_OK_PTR(ptr)                                                     \
	({                                                                     \
		const void *___p = (ptr);                                      \
		bool ___ok = ___p != NULL;                                     \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   "ASSERT_OK_PTR(%s): NULL", #ptr);           \
		___ok;                                                         \
	})

#define ASSERT_NULL(ptr)                                                       \
	({                                                                     \
		const void *___p = (ptr);                                      \
		bool ___ok = ___p == NULL;                                     \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__, "ASSERT_NULL(%s): %p",  \
				   #ptr, ___p);                                \
		___ok;                                                         \
	})

/* Stop the test (or helper) at the first assertion that fails. */
#define REQUIRE(assertion)                                                     \
	do {                                                                   \
		if (!(assertion))                                              \
			return;                                                \
	} while (0)
#define OK(call) REQUIRE(ASSERT_EQ((call), 0))

#define ASSERT_STREQ(a, b)                                                     \
	({                                                                     \
		const char *___a = (a), *___b = (b);                           \
		bool ___ok = ___a && ___b && !strcmp(___a, ___b);              \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   "ASSERT_STREQ(%s, %s): \"%s\" != \"%s\"",   \
				   #a, #b, ___a ? ___a : "(null)",             \
				   ___b ? ___b : "(null)");                    \
		___ok;                                                         \
	})

#define ASSERT_NEAR(a, b, eps)                                                 \
	({                                                                     \
		double ___a = (a), ___b = (b), ___e = (eps);                   \
		bool ___ok = ___a - ___b <= ___e && ___b - ___a <= ___e;       \
		if (!___ok)                                                    \
			test__fail(__FILE__, __LINE__,                         \
				   "ASSERT_NEAR(%s, %s): %.17g vs %.17g", #a,  \
				   #b, ___a, ___b);                            \
		___ok;                                                         \
	})

/*
 * Poll cond until it holds or timeout_ms passed: the synchronisation for
 * anything a thread or another process does (never a sleep). Evaluates to
 * whether cond held in time.
 */
#define WAIT_FOR(cond, timeout_ms)                                             \
	({                                                                     \
		long long ___end = test__now_ms() + (timeout_ms);              \
		bool ___ok;                                                    \
		while (!(___ok = !!(cond)) && test__now_ms() < ___end) {       \
			struct timespec ___ts = { 0, 1000000 };                \
			nanosleep(&___ts, NULL);                               \
		}                                                              \
		___ok;                                                         \
	})

/* Test output: shown when the test fails, or always with -v. */
#define test_log(...) fprintf(stderr, "    " __VA_ARGS__)

#endif /* MM_TEST_H */
