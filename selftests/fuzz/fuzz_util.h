/* SPDX-License-Identifier: Apache-2.0 */
/* Shared by the libFuzzer targets: scratch files and quiet stdio. */
#ifndef MM_FUZZ_UTIL_H
#define MM_FUZZ_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * The code under test prints its messages with stdio; the sanitizers and
 * libFuzzer report on file descriptor 2 directly, so pointing the stdio
 * streams at /dev/null keeps the run readable and loses no finding.
 */
static inline void fuzz_quiet(void)
{
	FILE *null = fopen("/dev/null", "w");

	if (null && !getenv("MM_FUZZ_VERBOSE")) {
		stdout = null;
		stderr = null;
	}
}

/* A per-process scratch file holding prefix + data; its path. */
static inline const char *fuzz_file(const char *name, const char *prefix,
				    const uint8_t *data, size_t size)
{
	static char dir[64];
	static char path[128];
	FILE *f;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/mm-fuzz-%d", (int)getpid());
		mkdir(dir, 0700);
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		abort();
	if (prefix)
		fputs(prefix, f);
	if (size && fwrite(data, 1, size, f) != size)
		abort();
	fclose(f);
	return path;
}

#endif /* MM_FUZZ_UTIL_H */
