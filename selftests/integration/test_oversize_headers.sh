#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Oversize request heads (> 512 B, the agent's capture, and > 4 KiB) with
# big cookies: always counted; attributed when Host and path come before
# the cut; the agent's truncation counter grows. With Host behind a 5 KiB
# cookie the route may be unknown to the agent, but the request is still
# counted once with its status (compared with every route merged).
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
c600=$(head -c 600 /dev/zero | tr '\0' 'c')
c5k=$(head -c 5000 /dev/zero | tr '\0' 'k')
trunc_metric=$(metrics | grep -o '^milometer_[a-z_]*trunc[a-z_]*' | sort -u | head -1)
[ -n "$trunc_metric" ] || fail "the agent exports no milometer_*trunc* counter"
t0=$(metric "$trunc_metric")
send() {
	local want=$1 out
	shift
	out=$(client send "$A" --count "$want" "$@")
	case "$out" in "responses $want "*) ;; *) fail "client: $out" ;; esac
}
send 10 --host api.example.com --path /v1/status -H "Cookie: a=$c600"
send 10 --host www.shop.test --path /cart/1 -H "Cookie: a=$c5k"
send 10 --host canary.example.com --path /c -H 'X-Canary: 1' -H "Cookie: a=$c600"
send 5 --host api.example.com --path /v1/orders --method POST --body x -H "Cookie: a=$c5k"
wait_for 10 metric_grew "$trunc_metric" "$t0" 35 ||
	fail "$trunc_metric went $t0 -> $(metric "$trunc_metric"), expected +35"
log "$trunc_metric: $t0 -> $(metric "$trunc_metric")"
compare_log --expect-total 35
# Host after the cut
send 10 --host api.example.com --path /v1/status --host-last -H "Cookie: a=$c5k"
send 10 --host nohost.test --path / --host-last -H "Cookie: a=$c600"
compare_log --expect-total 55 --merge '*' --latency-info
