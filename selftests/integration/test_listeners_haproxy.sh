#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Attribution per Gateway listener against haproxy: one frontend per
# listener of manifests/listeners (the redirect Gateway, the same hostname
# on both), the redirect answered by haproxy itself. Per route, rule and
# status class, on both legs, the agent's counts equal haproxy's log.
PROXY_EXE=mm-it-haproxy # a copy: other haproxy instances stay out
. "$(dirname "$0")/lib.sh"
. "$IT_DIR/listeners.sh"
need_root
need_bin milometer
use_manifests listeners
start_backends
start_agent # before haproxy: its threads must be found when it starts
listeners_haproxy
listeners_traffic
