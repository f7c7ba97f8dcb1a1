// SPDX-License-Identifier: Apache-2.0
/* `milometer run`: the flags and the config file (agent/config/options.c), then the agent. */
#include "agent/agent.h"
#include "agent/cmd/cmd.h"
#include "agent/config/options.h"
#include "policy/util/log.h"

int run__main(int argc, char **argv)
{
	struct agent_opts o;
	int ret;

	options__defaults(&o);
	ret = options__parse(&o, argc, argv);
	if (ret == 0 && o.verbose)
		log__set_level(LOG_DEBUG);
	if (ret == 0)
		ret = agent__run(&o) ? 1 : 0;
	else
		ret = ret > 0 ? 0 : 2;
	options__free(&o);
	return ret;
}
