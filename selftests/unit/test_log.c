// SPDX-License-Identifier: Apache-2.0
/* The one logger (policy/util/log.h): prefix, levels, rate limiting. */
#include <stdio.h>
#include <string.h>

#define LOG_MODULE "k8s"
#include "policy/util/log.h"
#include "selftests/unit/test.h"

struct captured {
	char text[4096];
	int levels[16];
	int n;
};

static void capture(void *ctx, int level, const char *line)
{
	struct captured *c = ctx;

	if (c->n < 16)
		c->levels[c->n] = level;
	c->n++;
	strncat(c->text, line, sizeof(c->text) - strlen(c->text) - 1);
}

TEST(log_prefix_levels_and_rate_limit)
{
	struct captured c = { 0 };
	struct log_ratelimit rl = { 0 };
	char longer[3000];

	log__set_sink(capture, &c);
	pr_warn("%s: listed %d objects\n", "pods", 3);
	log__msg(LOG_ERR, NULL, "run needs root\n");
	pr_debug("not shown at the default level\n");
	ASSERT_STREQ(c.text, "milometer: k8s: pods: listed 3 objects\n"
			     "milometer: run needs root\n");
	ASSERT_EQ(c.n, 2);
	ASSERT_EQ(c.levels[0], LOG_WARNING);
	ASSERT_EQ(c.levels[1], LOG_ERR);

	/* -v */
	log__set_level(LOG_DEBUG);
	pr_debug("shown\n");
	log__set_level(LOG_INFO);
	ASSERT_EQ(c.n, 3);
	ASSERT_OK_PTR(strstr(c.text, "milometer: k8s: shown\n"));

	/* 10 occurrences: logged at the 1st, 2nd, 4th and 8th */
	c.n = 0;
	c.text[0] = 0;
	for (int i = 0; i < 10; i++)
		pr_warn_ratelimited(&rl, "head lost on %s", "conn");
	ASSERT_EQ(c.n, 4);
	ASSERT_EQ(rl.count, 10);
	ASSERT_OK_PTR(strstr(c.text, "head lost on conn (8 times)\n"));

	/* a line cut at the buffer still ends the line */
	c.n = 0;
	c.text[0] = 0;
	memset(longer, 'x', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = 0;
	pr_info("%s\n", longer);
	ASSERT_EQ(c.n, 1);
	ASSERT_EQ(c.text[strlen(c.text) - 1], '\n');
	log__set_sink(NULL, NULL);
}
