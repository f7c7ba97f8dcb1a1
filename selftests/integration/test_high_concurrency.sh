#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Many connections at once: wrk with 200 keep-alive connections over the
# route mix, so hundreds of requests are in flight together on both legs
# (including requests whose route user space finishes: the X-Canary
# header match makes every *.example.com request wait for its head).
# Counts must still equal the log exactly.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
wrk -t2 -c200 -d3s -s "$IT_DIR/wrk_mix.lua" "http://127.0.0.1:$PROXY_PORT/" |
	tee "$T/wrk.txt"
hey -n 2000 -c 100 -host canary.example.com -H 'X-Canary: 1' \
	"http://127.0.0.1:$PROXY_PORT/c" >/dev/null
compare_log
