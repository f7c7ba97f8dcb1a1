// SPDX-License-Identifier: Apache-2.0
/* `milometer metrics-reference`: see agent/metrics_ref.h. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#define LOG_MODULE "metrics-reference"
#include "agent/cmd/cmd.h"
#include "agent/metrics_ref.h"
#include "policy/util/log.h"

int metrics_ref__main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "help", no_argument, NULL, 'h' }, {}
	};
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", lopts, NULL)) != -1) {
		fputs("usage: milometer metrics-reference\n"
		      "\nPrint the Markdown reference of every metric milometer "
		      "exposes (docs/metrics.md).\n",
		      c == 'h' ? stdout : stderr);
		return c == 'h' ? 0 : 2;
	}
	err = metrics_ref__write(stdout);
	if (err || fflush(stdout)) {
		pr_err("%s:%d: writing the reference failed: %s\n", __FILE__,
		       __LINE__, strerror(err ? -err : 5));
		return 1;
	}
	return 0;
}
