// SPDX-License-Identifier: Apache-2.0
/* agent/config/options.c: the --config file is untrusted input too. */
#include <errno.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>

#include "agent/config/options.h"
#include "selftests/unit/test.h"

/* Run options__parse with stderr captured into buf. */
static int parse_captured(int argc, char **argv, char *buf, size_t len)
{
	struct agent_opts o;
	char path[512];
	int fd, saved, ret;
	ssize_t n;

	snprintf(path, sizeof(path), "%s/stderr", test__tmpdir());
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0)
		return -errno;
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	options__defaults(&o);
	optind = 0;
	ret = options__parse(&o, argc, argv);
	options__free(&o);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = pread(fd, buf, len - 1, 0);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
	return ret;
}

/* more than 128 config strings exited 2 with no message */
TEST(options_config_string_limit_says_so)
{
	char path[512], msg[4096], *argv[2 + 2 * 130];
	int argc = 0, ret;
	FILE *f;

	snprintf(path, sizeof(path), "%s/c.yaml", test__tmpdir());
	f = fopen(path, "w");
	ASSERT_TRUE(f != NULL);
	fputs("manifests: /etc/m\n", f);
	fclose(f);
	argv[argc++] = "run";
	for (int i = 0; i < 130; i++) {
		argv[argc++] = "--config";
		argv[argc++] = path;
	}
	ret = parse_captured(argc, argv, msg, sizeof(msg));
	ASSERT_EQ(ret, -EINVAL);
	ASSERT_TRUE(strstr(msg, "c.yaml:") &&
			    strstr(msg, "too many strings in the config files"),
		    "%s", msg);
}

TEST(options_config_rejects_nul_and_wrong_types)
{
	static const char *const bad[][2] = {
		{ "manifests: \"/etc\\0/x\"\nproxy: {exe: [nginx]}\n",
		  "c.yaml:1: manifests: contains a NUL byte" },
		{ "manifests: [a]\n",
		  "c.yaml:1: manifests: expected a string" },
		{ "maxSeries: 0x 50\nproxy: {exe: [nginx]}\n",
		  "c.yaml:1: maxSeries: expected an integer" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char path[512], msg[4096];
		char *argv[] = { "run", "--config", path, NULL };
		FILE *f;

		snprintf(path, sizeof(path), "%s/c.yaml", test__tmpdir());
		f = fopen(path, "w");
		ASSERT_TRUE(f != NULL);
		fputs(bad[i][0], f);
		fclose(f);
		ASSERT_EQ(parse_captured(3, argv, msg, sizeof(msg)), -EINVAL);
		ASSERT_TRUE(strstr(msg, bad[i][1]), "case %zu: %s", i, msg);
	}
}
