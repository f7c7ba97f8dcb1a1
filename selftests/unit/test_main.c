// SPDX-License-Identifier: Apache-2.0
/* Runner for the unit tests: see test.h. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"

static struct test_case *tests;
static bool cur_failed;
static char cur_tmp[256];

void test__register(struct test_case *tc)
{
	struct test_case **pp = &tests;

	/* keep registration order stable: alphabetical by name */
	while (*pp && strcmp((*pp)->name, tc->name) < 0)
		pp = &(*pp)->next;
	tc->next = *pp;
	*pp = tc;
}

void test__fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	cur_failed = true;
	fprintf(stderr, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool test__failed(void)
{
	return cur_failed;
}

const char *test__tmpdir(void)
{
	if (!cur_tmp[0]) {
		snprintf(cur_tmp, sizeof(cur_tmp), "/tmp/mm-unit-XXXXXX");
		if (!mkdtemp(cur_tmp)) {
			perror("mkdtemp");
			exit(1);
		}
	}
	return cur_tmp;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0, i;
	struct test_case *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (tc = tests; tc; tc = tc->next) {
		bool selected = argc < 2;

		for (i = 1; i < argc; i++)
			if (strstr(tc->name, argv[i]))
				selected = true;
		if (!selected)
			continue;
		cur_failed = false;
		cur_tmp[0] = 0;
		tc->fn();
		printf("%s %s\n", cur_failed ? "FAIL" : "ok  ", tc->name);
		if (cur_failed) {
			failed++;
		} else {
			passed++;
			if (cur_tmp[0])
				nftw(cur_tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
		}
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
