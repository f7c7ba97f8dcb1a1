// SPDX-License-Identifier: Apache-2.0
/*
 * Cases for the runner's own test (bin/unit_runner_cases, driven by the
 * unit test runner_reports_every_outcome): one test of each outcome. Not
 * part of bin/unit_tests.
 */
#include <signal.h>
#include <stdlib.h>

#include "selftests/unit/test.h"

TEST(case_passes)
{
	if (ASSERT_EQ(1 + 1, 2))
		test_log("visible with -v only\n");
}

TEST(case_fails_and_goes_on)
{
	/* an assertion is an expression: false, recorded, the test goes on */
	bool held = ASSERT_EQ(1, 2);

	test_log("after the failed assertion: held=%d\n", held);
}

TEST(case_crashes)
{
	raise(SIGSEGV);
}

TEST(case_skips)
{
	SKIP("nothing to run here");
	test_log("never printed\n");
}

TEST(case_subtests)
{
	if (test__start_subtest("sub_passes"))
		ASSERT_STREQ("a", "a");
	if (test__start_subtest("sub_fails")) {
		long have = 3, want = 4;

		ASSERT_GE(have, want);
		ASSERT_OK(-2);
		ASSERT_OK_PTR(NULL);
	}
	if (test__start_subtest("sub_after_a_failure"))
		ASSERT_LT(1, 2);
}
