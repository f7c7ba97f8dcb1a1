// SPDX-License-Identifier: Apache-2.0
/*
 * Runner for the unit tests: see test.h. Each test runs in a child process
 * with its output in a temporary file: a crash or a hang (TEST_TIMEOUT_S)
 * fails that test alone, and the output is shown for failed and skipped
 * tests, or for every test with -v.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fnmatch.h>
#include <ftw.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "test.h"

/* A test that runs longer than this is stuck: fail it, go on. */
#define TEST_TIMEOUT_S 120

enum { RES_PASS = 0, RES_FAIL = 1, RES_SKIP = 2 };

static struct test_case *tests;
static struct test_case *cur_test;
static bool cur_failed, cur_skipped;
static char cur_tmp[256];
/* the running subtest: its name and whether it failed */
static char cur_sub[128];
static bool cur_sub_failed;
/* the name filters (argv), and whether cur_test matched one without '/' */
static char **filters;
static int nfilters;
static bool cur_all_subtests;

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

	cur_failed = cur_sub_failed = true;
	fprintf(stderr, "    %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void test__skip(const char *fmt, ...)
{
	va_list ap;

	cur_skipped = true;
	fputs("    skipped: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

bool test__failed(void)
{
	return cur_failed;
}

long long test__now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

const char *test__tmpdir(void)
{
	if (!cur_tmp[0]) {
		snprintf(cur_tmp, sizeof(cur_tmp), "/tmp/mm-unit-XXXXXX");
		if (!mkdtemp(cur_tmp)) {
			perror("mkdtemp");
			exit(RES_FAIL);
		}
	}
	return cur_tmp;
}

/*
 * One filter against one name: a glob (*, ?, [...]) matches the whole name,
 * anything else is a substring.
 */
static bool name_matches(const char *pattern, size_t len, const char *name)
{
	char pat[256];

	if (len >= sizeof(pat))
		len = sizeof(pat) - 1;
	memcpy(pat, pattern, len);
	pat[len] = 0;
	if (strpbrk(pat, "*?["))
		return !fnmatch(pat, name, 0);
	return strstr(name, pat) != NULL;
}

/* The test part of a filter: up to its '/', if any. */
static size_t test_part(const char *filter)
{
	const char *slash = strchr(filter, '/');

	return slash ? (size_t)(slash - filter) : strlen(filter);
}

static bool test_selected(const struct test_case *tc, bool *all_subtests)
{
	bool selected = !nfilters;
	int i;

	*all_subtests = !nfilters;
	for (i = 0; i < nfilters; i++) {
		if (!name_matches(filters[i], test_part(filters[i]), tc->name))
			continue;
		selected = true;
		if (!strchr(filters[i], '/'))
			*all_subtests = true;
	}
	return selected;
}

static void end_subtest(void)
{
	if (!cur_sub[0])
		return;
	fflush(stderr);
	printf("%s %s/%s\n", cur_sub_failed ? "FAIL" : "ok  ", cur_test->name,
	       cur_sub);
	fflush(stdout);
	cur_sub[0] = 0;
}

bool test__start_subtest(const char *name)
{
	bool selected = cur_all_subtests;
	int i;

	end_subtest();
	for (i = 0; i < nfilters && !selected; i++) {
		const char *slash = strchr(filters[i], '/');

		selected = slash &&
			   name_matches(filters[i], test_part(filters[i]),
					cur_test->name) &&
			   name_matches(slash + 1, strlen(slash + 1), name);
	}
	if (!selected)
		return false;
	snprintf(cur_sub, sizeof(cur_sub), "%s", name);
	cur_sub_failed = false;
	return true;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

/* In the child: run the test with stderr in log_fd; exit with RES_*. */
static void run_child(struct test_case *tc, int log_fd)
{
	dup2(log_fd, STDERR_FILENO);
	close(log_fd);
	alarm(TEST_TIMEOUT_S);
	cur_test = tc;
	tc->fn();
	end_subtest();
	fflush(NULL);
	if (cur_failed)
		_exit(RES_FAIL); /* keep its tmpdir for a look */
	if (cur_tmp[0])
		nftw(cur_tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	_exit(cur_skipped ? RES_SKIP : RES_PASS);
}

static void copy_log(FILE *log)
{
	char line[4096];

	fflush(stdout);
	rewind(log);
	while (fgets(line, sizeof(line), log))
		fputs(line, stdout);
}

/* Run one test in a child; print its line (and its log when asked). */
static int run_one(struct test_case *tc, bool verbose)
{
	FILE *log = tmpfile();
	int status, res;
	pid_t pid;

	if (!log) {
		printf("FAIL %s (tmpfile: %s)\n", tc->name, strerror(errno));
		return RES_FAIL;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		printf("FAIL %s (fork: %s)\n", tc->name, strerror(errno));
		fclose(log);
		return RES_FAIL;
	}
	if (!pid)
		run_child(tc, fileno(log));
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) <= RES_SKIP)
		res = WEXITSTATUS(status);
	else
		res = RES_FAIL;
	if (res == RES_PASS)
		printf("ok   %s\n", tc->name);
	else if (res == RES_SKIP)
		printf("SKIP %s\n", tc->name);
	else if (WIFSIGNALED(status))
		printf("FAIL %s (%s)\n", tc->name,
		       WTERMSIG(status) == SIGALRM
			       ? "timed out"
			       : strsignal(WTERMSIG(status)));
	else
		printf("FAIL %s\n", tc->name);
	if (res != RES_PASS || verbose)
		copy_log(log);
	fclose(log);
	return res;
}

int main(int argc, char **argv)
{
	int counts[3] = { 0 }, i;
	bool verbose = false;
	struct test_case *tc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	filters = argv + 1;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-v"))
			verbose = true;
		else if (argv[i][0] == '-') {
			fprintf(stderr,
				"usage: %s [-v] [NAME|GLOB[/SUBTEST]...]\n",
				argv[0]);
			return 2;
		} else {
			filters[nfilters++] = argv[i];
		}
	}
	for (tc = tests; tc; tc = tc->next) {
		if (test_selected(tc, &cur_all_subtests))
			counts[run_one(tc, verbose)]++;
	}
	printf("%d passed, %d failed, %d skipped\n", counts[RES_PASS],
	       counts[RES_FAIL], counts[RES_SKIP]);
	return counts[RES_FAIL] ? 1 : 0;
}
