#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Byte-by-byte: every request (head and body) sent one byte per send with
# TCP_NODELAY, so the proxy reads it in many small reads.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
n=0
slow() {
	local want=$1 out
	shift
	out=$(client send "$A" --bytewise --count "$want" "$@")
	log "bytewise $want $*: $out"
	case "$out" in "responses $want "*) ;; *) fail "client read: $out" ;; esac
	n=$((n + want))
}
slow 3 --host api.example.com --path /v1/status -H 'User-Agent: bytewise'
slow 3 --host api.example.com --path /v1/orders --method POST \
	--body '{"order": 1, "items": [1, 2, 3]}'
slow 2 --host www.shop.test --path /cart/9 -H 'Accept: */*'
slow 2 --host canary.example.com --path / -H 'X-Canary: 1'
slow 2 --host nohost.test --path /
# nginx times an upstream exchange from its connect (the oracle takes its
# connect time off), on its cached per-turn clock: the first request on a
# new upstream connection read 10 ms where the agent (request written ->
# response read) had 1 ms, once, on a loaded `make check` run, and 312 ms
# before the connect time was taken off: 6 ms of slack per request
compare_log --expect-total $n --slack-ms 6
