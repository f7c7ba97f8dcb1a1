/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Where the route test manifests are: relative to the repository root
 * (`make unit` runs from there), else found from the test binary's
 * location (bin/unit_tests -> ../selftests/...), so the tests also run from
 * another directory.
 */
#ifndef MM_TEST_ROUTE_DATA_H
#define MM_TEST_ROUTE_DATA_H

#include <limits.h>
#include <string.h>
#include <unistd.h>

#define ROUTE_TESTDATA "selftests/unit/testdata/routes/precedence"

static inline const char *route_testdata(void)
{
	static char path[PATH_MAX];
	char exe[PATH_MAX];
	ssize_t n;
	char *slash;

	if (!access(ROUTE_TESTDATA, R_OK))
		return ROUTE_TESTDATA;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0)
		return ROUTE_TESTDATA;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (slash)
		*slash = '\0';
	if (strlen(exe) + sizeof("/../" ROUTE_TESTDATA) > sizeof(path))
		return ROUTE_TESTDATA;
	strcpy(path, exe);
	strcat(path, "/../" ROUTE_TESTDATA);
	return path;
}

#endif /* MM_TEST_ROUTE_DATA_H */
