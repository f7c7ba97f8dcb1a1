#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Mid-request close: the client sends a request to a slow backend and
# closes (FIN, or RST) before the response. nginx logs 499; the agent
# counts the exchange as aborted (status 0, milometer_aborted="true") on
# the downstream leg and on the upstream leg nginx then abandons.
. "$(dirname "$0")/lib.sh"
need_root
need_bin milometer gen_nginx
use_manifests base
start_backends
start_nginx
start_agent
A=127.0.0.1:$PROXY_PORT
for i in $(seq 8); do
	client abort "$A" --host www.shop.test --path '/cart/slow?delay_ms=1500' \
		--after-ms 150
	client abort "$A" --host api.example.com --path '/v1/slow?delay_ms=1500' \
		--after-ms 100 --rst
done
# normal requests around them
hey -n 200 -c 4 -host www.shop.test "http://127.0.0.1:$PROXY_PORT/cart/ok" >/dev/null
wait_log_lines "$NGINX_LOG" 216 || fail "nginx logged $(log_lines "$NGINX_LOG") of 216 requests"
n499=$(cut -f2 "$NGINX_LOG" | grep -c '^499$' || true)
log "nginx logged $n499 requests with 499"
[ "$n499" = 16 ] || fail "expected 16 client-closed (499) requests in the log, got $n499"
compare_log --expect-total 216
