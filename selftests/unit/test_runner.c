// SPDX-License-Identifier: Apache-2.0
/*
 * The runner itself (test_main.c): bin/unit_runner_cases holds one test of
 * each outcome; its output and exit status must say exactly what happened
 * (a skip is never a pass, a crash fails one test and the run goes on, -v
 * runs the tests and shows the output of passing ones).
 */
#include <limits.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "selftests/unit/test.h"

/* Run the cases binary (next to this one) with args; its output in out. */
static int run_cases(const char *args, char *out, size_t len)
{
	char exe[PATH_MAX], cmd[PATH_MAX + 256], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t got;
	FILE *p;
	int rc;

	if (n <= 0)
		return -1;
	exe[n] = 0;
	slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = 0;
	snprintf(cmd, sizeof(cmd), "%s/unit_runner_cases %s 2>&1", exe, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	got = fread(out, 1, len - 1, p);
	out[got] = 0;
	rc = pclose(p);
	return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

TEST(runner_reports_every_outcome)
{
	static char out[8192];

	ASSERT_EQ(run_cases("", out, sizeof(out)), 1);
	ASSERT_TRUE(strstr(out, "ok   case_passes\n") != NULL, "%s", out);
	ASSERT_TRUE(strstr(out, "FAIL case_fails_and_goes_on\n") != NULL, "%s",
		    out);
	ASSERT_TRUE(strstr(out, "after the failed assertion: held=0") != NULL,
		    "%s", out);
	ASSERT_TRUE(strstr(out, "FAIL case_crashes (Segmentation fault)") !=
			    NULL,
		    "%s", out);
	ASSERT_TRUE(
		strstr(out,
		       "SKIP case_skips\n    skipped: nothing to run here") !=
			NULL,
		"%s", out);
	ASSERT_TRUE(!strstr(out, "never printed"), "%s", out);
	ASSERT_TRUE(!strstr(out, "visible with -v only"), "%s", out);
	ASSERT_TRUE(strstr(out, "\n1 passed, 3 failed, 1 skipped\n") != NULL,
		    "%s", out);
}

TEST(runner_subtests_and_comparisons)
{
	static char out[8192];

	ASSERT_EQ(run_cases("case_subtests", out, sizeof(out)), 1);
	/* each subtest on its own line, before its test's line */
	ASSERT_OK_PTR(strstr(out, "ok   case_subtests/sub_passes\n"
				  "FAIL case_subtests/sub_fails\n"
				  "ok   case_subtests/sub_after_a_failure\n"
				  "FAIL case_subtests\n"));
	/* a failed comparison shows both expressions and both values */
	ASSERT_OK_PTR(strstr(out, "ASSERT_GE(have, want): 3 >= 4 is false"));
	ASSERT_OK_PTR(
		strstr(out, "ASSERT_OK(-2): -2 (No such file or directory)"));
	ASSERT_OK_PTR(strstr(out, "ASSERT_OK_PTR(NULL): NULL"));
	ASSERT_OK_PTR(strstr(out, "0 passed, 1 failed, 0 skipped\n"));

	/* test/subtest globs pick subtests; a glob matches the whole name */
	ASSERT_EQ(run_cases("'case_sub*/sub_p*'", out, sizeof(out)), 0);
	ASSERT_OK_PTR(strstr(out, "ok   case_subtests/sub_passes\n"
				  "ok   case_subtests\n"));
	ASSERT_NULL(strstr(out, "sub_fails"));
	ASSERT_EQ(run_cases("'case_passe?'", out, sizeof(out)), 0);
	ASSERT_OK_PTR(strstr(out, "1 passed, 0 failed, 0 skipped\n"));
	ASSERT_EQ(run_cases("'case_pass'", out, sizeof(out)), 0);
	ASSERT_OK_PTR(strstr(out, "1 passed, 0 failed, 0 skipped\n"));
	ASSERT_EQ(run_cases("'case_pas?'", out, sizeof(out)), 0);
	ASSERT_OK_PTR(strstr(out, "0 passed, 0 failed, 0 skipped\n"));
}

TEST(runner_verbose_runs_and_filters)
{
	static char out[8192];

	/* -v once ran nothing and exited 0 */
	ASSERT_EQ(run_cases("-v case_passes", out, sizeof(out)), 0);
	ASSERT_TRUE(strstr(out, "ok   case_passes\n    visible with -v only") !=
			    NULL,
		    "%s", out);
	ASSERT_TRUE(strstr(out, "1 passed, 0 failed, 0 skipped\n") != NULL,
		    "%s", out);
	ASSERT_EQ(run_cases("case_skips", out, sizeof(out)), 0);
	ASSERT_TRUE(strstr(out, "0 passed, 0 failed, 1 skipped\n") != NULL,
		    "%s", out);
	ASSERT_EQ(run_cases("--bogus", out, sizeof(out)), 2);
	ASSERT_TRUE(strstr(out, "usage:") != NULL, "%s", out);
}
