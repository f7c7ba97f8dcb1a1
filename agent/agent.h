/* SPDX-License-Identifier: Apache-2.0 */
/* `milometer run`: wire every part together (the state is in state.h). */
#ifndef MM_AGENT_AGENT_H
#define MM_AGENT_AGENT_H

#include "agent/config/options.h"

int agent__run(struct agent_opts *o);

#endif /* MM_AGENT_AGENT_H */
