#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attribution per Gateway listener against nginx: the redirect Gateway of
# manifests/listeners served on two socket ports (the listener ports
# themselves), the same hostname on both. Requests on listener http are
# counted on t/redirect (nginx answers them, 301), those on listener web
# on t/app, t/api only where it is attached (by parentRef port); the
# upstream legs, through keep-alive connections both servers share, keep
# their downstream request's route. Per route, rule and status class, on
# both legs, the agent's counts equal nginx's log.
. "$(dirname "$0")/lib.sh"
. "$IT_DIR/listeners.sh"
need_root
need_bin milometer
use_manifests listeners
listeners_explain "$HTTP_SOCK" "$WEB_SOCK"
start_backends
start_agent
grep -q "socket port $WEB_SOCK serves listener port $WEB_SOCK" "$T/agent.out" ||
	fail "the agent did not map listener web's port: $(tail -5 "$T/agent.out")"
listeners_nginx
listeners_traffic
