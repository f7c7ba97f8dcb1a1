#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Chunked bodies both ways: chunked request bodies (several chunks) and
# chunked responses, small and large, on keep-alive connections.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
set -f # URLs with "?" in unquoted lists
body=$(head -c 3000 /dev/zero | tr '\0' 'b')
for args in "--path /v1/orders?chunked=1" "--path /v1/orders?chunked=1&size=200000" \
	"--path /v1/orders?status=404&chunked=1"; do
	out=$(client send "$A" --host api.example.com --method POST --chunked \
		--body "$body" --count 10 $args)
	case "$out" in "responses 10 "*) ;; *) fail "chunked $args: $out" ;; esac
done
out=$(client send "$A" --host canary.example.com -H 'X-Canary: 1' \
	--path '/big?chunked=1&size=1000000' --count 5)
case "$out" in "responses 5 "*) ;; *) fail "big chunked: $out" ;; esac
hey -n 500 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/c?chunked=1" >/dev/null
# nginx buffers the 1 MB responses to a temp file and serves them over many
# event-loop turns; its cached clock lags the syscalls by up to a turn at
# each end (seen: +0.2..+1.6 ms a request idle, +2.6 ms under CI load).
compare_log --expect-total 535 --slack-ms 4
