// SPDX-License-Identifier: Apache-2.0
/* The agent's --config file (agent/config/options.c; no libbpf in that file). */
#include "agent/config/options.h"
#include "selftests/fuzz/fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int quiet;
	struct agent_opts o;
	char *argv[] = { "run", "--config", NULL, NULL };

	if (!quiet++)
		fuzz_quiet();
	argv[2] = (char *)fuzz_file("config.yaml", NULL, data, size);
	options__defaults(&o);
	optind = 0;
	options__parse(&o, 3, argv);
	options__free(&o);
	return 0;
}
